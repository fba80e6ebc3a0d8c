import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { toIso } from "../../lib/time.js";
import { licenseIdOfKey } from "./license-record.js";
import { deactivationWindowMs } from "./deactivate-machine.js";
import { listActiveMachines, type MachinesFrom } from "./license-machines.js";
import { requireLicenseView } from "./license-views.js";
import { listOfflinePlaces } from "./offline-places.js";
import type { LicenseDetail } from "../../contracts/licenses.js";
import type { PastActivation } from "../../contracts/machines.js";

export type PastActivationView = PastActivation;

/** Active machines a license's answer embeds: the first page; the rest are a cursor away. */
export const embeddedMachines = 200;

/**
 * A license with a page of its active machines (by default the first `embeddedMachines`, in
 * activation order) and, newest first, its ended activations (at most 100). `activeMachines`
 * counts every active machine; `machinesNextCursor` continues the machines at the machines route.
 */
export async function showLicense(
  db: Kysely<DB>,
  licenseKey: string,
  now = Date.now(),
  machinesPage: MachinesFrom & { limit?: number } = {},
): Promise<LicenseDetail> {
  const license = await requireLicenseView(db, licenseKey);
  const licenseId = await licenseIdOfKey(db, licenseKey);
  const seats = await seatFacts(db, licenseKey, now);
  const machines = await listActiveMachines(
    db,
    licenseId,
    {
      ...machinesPage,
      limit: machinesPage.limit ?? embeddedMachines,
      leaseDays: seats.machineLeaseDays,
    },
    now,
  );
  const past = await db
    .selectFrom("activations")
    .select([
      "machine_id",
      "machine_name",
      "platform",
      "activated_at",
      "last_seen_at",
      "deactivated_at",
      "deactivated_by",
      "app_version",
    ])
    .where("license_id", "=", licenseId)
    .where("deactivated_at", "is not", null)
    .orderBy("deactivated_at", "desc")
    .limit(100)
    .execute();
  return {
    ...license,
    machines: machines.items,
    machinesNextCursor: machines.nextCursor,
    ...seats,
    offlinePlaces: await listOfflinePlaces(db, licenseId, now),
    pastActivations: past.map((m) => ({
      machineId: m.machine_id,
      machineName: m.machine_name,
      platform: m.platform,
      activatedAt: toIso(m.activated_at),
      lastSeenAt: toIso(m.last_seen_at),
      appVersion: m.app_version,
      deactivatedAt: toIso(m.deactivated_at ?? m.last_seen_at),
      deactivatedBy: m.deactivated_by,
    })),
  };
}

/** The license's product's lease and the app's deactivations the churn limit counts now. */
async function seatFacts(db: Kysely<DB>, licenseKey: string, now: number) {
  const row = await db
    .selectFrom("licenses")
    .innerJoin("products", "products.id", "licenses.product_id")
    .select((eb) => [
      "products.machine_lease_days",
      "products.offline_allowance",
      eb
        .selectFrom("activations")
        .select((c) => c.fn.countAll<number | string | bigint>().as("n"))
        .whereRef("activations.license_id", "=", "licenses.id")
        .where("activations.deactivated_at", ">", now - deactivationWindowMs)
        .where("activations.deactivated_by", "=", "client")
        .as("ended"),
    ])
    .where("licenses.license_key", "=", licenseKey)
    .executeTakeFirst();
  return {
    machineLeaseDays: row?.machine_lease_days ?? null,
    offlineAllowance: row?.offline_allowance ?? 0,
    deactivationsLast30Days: Number(row?.ended ?? 0),
  };
}
