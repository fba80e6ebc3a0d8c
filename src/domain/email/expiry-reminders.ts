import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { toIso } from "../../lib/time.js";
import { expiringBetween } from "../licenses/license-record.js";
import type { LicenseEmailInput } from "./messages.js";

/** A license is reminded this long before it ends. */
export const expiryReminderMs = 7 * 86_400_000;

/**
 * Active licenses of products with expiry reminders on that end within 7 days, have a customer
 * address and no license_expiring message for this expiry yet (none queued since a day before
 * the reminder was due): each as enqueueLicenseExpiring takes it, keyed by license and expiry,
 * so a renewal that moves the expiry earns a new reminder. Oldest expiry first, `limit` at most.
 */
export async function licensesToRemind(
  db: Kysely<DB>,
  now: number,
  limit: number,
): Promise<LicenseEmailInput[]> {
  const rows = await db
    .selectFrom("licenses")
    .innerJoin("products as p", "p.id", "licenses.product_id")
    .innerJoin("product_email_settings as s", "s.product_id", "p.id")
    .select([
      "licenses.id",
      "licenses.license_key",
      "licenses.expires_at",
      "licenses.max_machines",
      "licenses.customer_email",
      "licenses.customer_name",
      "p.id as product_id",
      "p.name as product_name",
    ])
    .where("s.expiry_reminders", "=", 1)
    .where("licenses.status", "=", "ACTIVE")
    .where("licenses.customer_email", "is not", null)
    .where((eb) => expiringBetween(eb, now, now + expiryReminderMs))
    .where(({ not, exists, selectFrom, eb }) =>
      not(
        exists(
          selectFrom("email_messages as m")
            .select("m.id")
            .whereRef("m.license_id", "=", "licenses.id")
            .where("m.kind", "=", "license_expiring")
            .where(
              "m.created_at",
              ">",
              eb("licenses.expires_at", "-", expiryReminderMs + 86_400_000),
            ),
        ),
      ),
    )
    .orderBy("licenses.expires_at")
    .orderBy("licenses.id")
    .limit(limit)
    .execute();
  return rows.map((row) => ({
    license: {
      licenseKey: row.license_key,
      expiresAt: row.expires_at === null ? null : toIso(row.expires_at),
      maxMachines: row.max_machines,
    },
    product: { id: row.product_id, name: row.product_name },
    customerEmail: row.customer_email ?? "",
    customerName: row.customer_name,
    idempotencyKey: `${row.id}:${row.expires_at}`,
  }));
}
