import { compileOnce } from "../../db/compiled-query.js";
import type { Kysely, Transaction } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { assertMaxLength } from "../limits.js";
import { lockLicense } from "./license-record.js";
import { limits } from "../../contracts/vocabulary.js";

export interface DeactivateInput {
  licenseKey: string;
  machineId: string;
}

/** Who ends an activation: the public endpoint (a client) or an administrator. */
export type DeactivatedBy = "client" | "admin";

/** The window of the churn limit: public deactivations are counted over the trailing 30 days. */
export const deactivationWindowMs = 30 * 86_400_000;

/** The license a deactivation names: its id, its product and its churn limit (null: none). */
export interface LicenseToDeactivate {
  id: string;
  productSlug: string;
  deactivationLimit: number | null;
}

/**
 * Deactivate's checks, in the spec's order: the license (404 LICENSE_NOT_FOUND), then the
 * machine id's length. Works whatever the license's status or expiry: a customer must always be
 * able to free a slot.
 */
export async function licenseToDeactivate(
  db: Kysely<DB>,
  input: DeactivateInput,
): Promise<LicenseToDeactivate> {
  // An oversized key was never stored: the query would find nothing.
  const [license] =
    input.licenseKey.length > limits.identifier
      ? []
      : (await findLicenseForDeactivation(db, { licenseKey: input.licenseKey })).rows;
  if (!license) throw ShipkeyError.spec("LICENSE_NOT_FOUND");
  assertMaxLength("machineId", input.machineId, limits.identifier);
  return {
    id: license.id,
    productSlug: license.product_slug,
    deactivationLimit: license.deactivation_limit,
  };
}

/**
 * Ends the machine's active activation (kept as history, with who ended it) and frees its slot,
 * in the caller's transaction.
 *
 * A client's deactivation is refused with 403 DEACTIVATION_LIMIT_REACHED when the license's
 * churn limit (its own, else its product's; none by default) is spent: that many client
 * deactivations in the trailing 30 days, this one included. Administrators are never limited,
 * and theirs do not count.
 */
export async function endMachineActivation(
  trx: Transaction<DB>,
  license: LicenseToDeactivate,
  machineId: string,
  by: DeactivatedBy,
  now: number,
): Promise<void> {
  const limit = by === "client" ? license.deactivationLimit : null;
  if (limit === null) {
    await endActivation(trx, license.id, machineId, now, by);
    return;
  }
  // The license row first, so concurrent deactivations of the license count one at a time.
  await lockLicense(trx, { licenseId: license.id });
  await endActivation(trx, license.id, machineId, now, "client");
  const { rows } = await countClientDeactivations(trx, {
    licenseId: license.id,
    since: now - deactivationWindowMs,
  });
  if (Number(rows[0]?.ended ?? 0) > limit) {
    throw ShipkeyError.spec("DEACTIVATION_LIMIT_REACHED");
  }
}

/**
 * Ends one active activation and decrements the slot counter in one transaction. The conditional
 * UPDATE means that of several concurrent calls exactly one sees a row change; the rest get 404.
 */
async function endActivation(
  trx: Transaction<DB>,
  licenseId: string,
  machineId: string,
  now: number,
  by: DeactivatedBy,
): Promise<void> {
  const ended = await endActiveActivation(trx, { licenseId, machineId, now, by });
  if (!ended.numAffectedRows) throw ShipkeyError.spec("ACTIVATION_NOT_FOUND");
  await freeSlot(trx, { licenseId });
}

// The license's id, its product's slug and its churn limit: its own, else its product's
// (null: none).
const findLicenseForDeactivation = compileOnce<
  { licenseKey: string },
  { id: string; product_slug: string; deactivation_limit: number | null }
>(["licenseKey"], (db, p) =>
  db
    .selectFrom("licenses")
    .innerJoin("products", "products.id", "licenses.product_id")
    .select((eb) => [
      "licenses.id",
      "products.slug as product_slug",
      eb.fn
        .coalesce(
          "licenses.max_deactivations_per_30_days",
          "products.max_deactivations_per_30_days",
        )
        .as("deactivation_limit"),
    ])
    .where("licenses.license_key", "=", p.licenseKey),
);

const countClientDeactivations = compileOnce<
  { licenseId: string; since: number },
  { ended: number | string | bigint }
>(["licenseId", "since"], (db, p) =>
  db
    .selectFrom("activations")
    .select((eb) => eb.fn.countAll<number | string | bigint>().as("ended"))
    .where("license_id", "=", p.licenseId)
    .where("deactivated_at", ">", p.since)
    .where("deactivated_by", "=", "client"),
);

const endActiveActivation = compileOnce<
  { licenseId: string; machineId: string; now: number; by: DeactivatedBy },
  never
>(["licenseId", "machineId", "now", "by"], (db, p) =>
  db
    .updateTable("activations")
    .set({ deactivated_at: p.now, deactivated_by: p.by })
    .where("license_id", "=", p.licenseId)
    .where("machine_id", "=", p.machineId)
    .where("deactivated_at", "is", null),
);

const freeSlot = compileOnce<{ licenseId: string }, never>(["licenseId"], (db, p) =>
  db
    .updateTable("licenses")
    .set((eb) => ({ active_machines: eb("active_machines", "-", 1) }))
    .where("id", "=", p.licenseId),
);
