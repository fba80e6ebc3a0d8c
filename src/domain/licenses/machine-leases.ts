import type { Kysely, Transaction } from "kysely";
import type { DB } from "../../db/schema.js";

export const dayMs = 86_400_000;

/** Machines deactivated per query of the sweep; it loops until none is left. */
export const leaseSweepBatchSize = 200;

/**
 * When a machine's lease ends: `leaseDays` after it was last seen (activate, validate, checkout),
 * or when its certificate expires if that is later (a machine may run offline until then). null:
 * the product sets no lease. The sweep frees the machine's slot once this moment has come.
 */
export function leaseExpiresAt(
  lastSeenAt: number,
  certificateExpiresAt: number | null,
  leaseDays: number | null,
): number | null {
  if (leaseDays === null) return null;
  return Math.max(lastSeenAt + leaseDays * dayMs, certificateExpiresAt ?? 0);
}

/**
 * Active machines whose lease ends within `withinMs` from `now` (products that set
 * machineLeaseDays; of one product, or of all with productId null). A machine whose certificate
 * outlasts that window is not counted. Like the sweep, it reads the index by last-seen.
 */
export async function leasesEndingWithin(
  db: Kysely<DB>,
  productId: string | null,
  now: number,
  withinMs: number,
): Promise<number> {
  const horizon = now + withinMs;
  let total = 0;
  for (const product of await leasedProducts(db, productId)) {
    const cutoff = horizon - (product.machine_lease_days ?? 0) * dayMs;
    const row = await lapsedMachines(db, product.id, cutoff, horizon)
      .select((eb) => eb.fn.countAll<number | string>().as("count"))
      .executeTakeFirst();
    total += Number(row?.count ?? 0);
  }
  return total;
}

/** The products that set machineLeaseDays: all of them, or the one with `productId`. */
export function leasedProducts(db: Kysely<DB>, productId: string | null) {
  let query = db
    .selectFrom("products")
    .select(["id", "slug", "machine_lease_days"])
    .where("machine_lease_days", "is not", null);
  if (productId !== null) query = query.where("id", "=", productId);
  return query.execute();
}

/**
 * The product's active machines last seen at or before `cutoff` and holding no certificate that
 * expires after `coveredUntil` (read from the index of active activations by last-seen).
 */
function lapsedMachines(db: Kysely<DB>, productId: string, cutoff: number, coveredUntil: number) {
  return db
    .selectFrom("activations")
    .innerJoin("licenses", "licenses.id", "activations.license_id")
    .where("activations.deactivated_at", "is", null)
    .where("activations.last_seen_at", "<=", cutoff)
    .where("licenses.product_id", "=", productId)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom("license_certificates")
            .select("license_certificates.license_id")
            .whereRef("license_certificates.license_id", "=", "activations.license_id")
            .whereRef("license_certificates.machine_id", "=", "activations.machine_id")
            .where("license_certificates.expires_at", ">", coveredUntil),
        ),
      ),
    );
}

/** Up to `limit` of the product's machines past their lease (lapsedMachines), oldest seen first. */
export function leaseCandidates(
  db: Kysely<DB>,
  productId: string,
  cutoff: number,
  now: number,
  limit: number,
) {
  return lapsedMachines(db, productId, cutoff, now)
    .select([
      "activations.id",
      "activations.license_id",
      "activations.machine_id",
      "activations.last_seen_at",
      "licenses.license_key",
    ])
    .orderBy("activations.last_seen_at")
    .limit(limit)
    .execute();
}

/** A machine the lease sweep found lapsed (leaseCandidates). */
export type LapsedMachine = Awaited<ReturnType<typeof leaseCandidates>>[number];

/**
 * Ends one lapsed machine and frees its slot, in the caller's transaction, unless it was seen,
 * covered or ended meanwhile: a conditional UPDATE checks again that it is active, unseen since
 * the cutoff and without an unexpired certificate. True if this call ended it.
 */
export async function endLapsedActivation(
  trx: Transaction<DB>,
  machine: LapsedMachine,
  at: { cutoff: number; now: number },
): Promise<boolean> {
  const ended = await trx
    .updateTable("activations")
    .set({ deactivated_at: at.now, deactivated_by: "lease" })
    .where("id", "=", machine.id)
    .where("deactivated_at", "is", null)
    .where("last_seen_at", "<=", at.cutoff)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom("license_certificates")
            .select("license_certificates.license_id")
            .where("license_certificates.license_id", "=", machine.license_id)
            .where("license_certificates.machine_id", "=", machine.machine_id)
            .where("license_certificates.expires_at", ">", at.now),
        ),
      ),
    )
    .executeTakeFirst();
  if (ended.numUpdatedRows === 0n) return false;
  await trx
    .updateTable("licenses")
    .set((eb) => ({ active_machines: eb("active_machines", "-", 1) }))
    .where("id", "=", machine.license_id)
    .execute();
  return true;
}
