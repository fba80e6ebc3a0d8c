import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { inTransaction } from "../../db/transaction.js";
import { type Actor, recordAudit } from "../audit/audit-log.js";
import { emitWebhookEvent } from "../webhooks/events.js";

export const dayMs = 86_400_000;

/** Machines deactivated per query of the sweep; it loops until none is left. */
export const leaseSweepBatchSize = 200;

const leaseActor: Actor = { type: "service", id: null, label: "machine lease", ip: null };

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
 * Deactivates every machine whose lease has ended, product by product (only products that set
 * machineLeaseDays). Each machine ends in its own short transaction, by a conditional UPDATE that
 * checks again that it is active, unseen since the cutoff and without an unexpired certificate:
 * of several processes sweeping at once exactly one ends a machine (and audits it, and emits
 * machine.lease_expired); the others see no row change and move on. Idempotent: a second run
 * finds nothing. The candidates come from the index of active activations by last-seen, so a run
 * reads only the machines past a lease.
 */
export async function expireMachineLeases(
  db: Kysely<DB>,
  options: { now?: number; batchSize?: number } = {},
): Promise<{ expired: number }> {
  const now = options.now ?? Date.now();
  const batchSize = options.batchSize ?? leaseSweepBatchSize;
  let expired = 0;
  for (const product of await leasedProducts(db, null)) {
    const days = product.machine_lease_days ?? 0;
    const cutoff = now - days * dayMs;
    for (;;) {
      const candidates = await leaseCandidates(db, product.id, cutoff, now, batchSize);
      for (const candidate of candidates) {
        const ended = await endLapsedMachine(
          db,
          { ...candidate, product: product.slug },
          {
            cutoff,
            now,
            days,
          },
        );
        if (ended) expired++;
      }
      if (candidates.length < batchSize) break;
    }
  }
  return { expired };
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
function leasedProducts(db: Kysely<DB>, productId: string | null) {
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

function leaseCandidates(
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

/** Ends one lapsed machine unless it was seen, covered or ended meanwhile; true if this call did. */
async function endLapsedMachine(
  db: Kysely<DB>,
  machine: {
    id: string;
    license_id: string;
    machine_id: string;
    last_seen_at: number;
    license_key: string;
    product: string;
  },
  at: { cutoff: number; now: number; days: number },
): Promise<boolean> {
  return inTransaction(db, async (trx) => {
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
    await recordAudit(
      trx,
      leaseActor,
      "machine.lease_expired",
      { type: "license", id: machine.license_id },
      {
        licenseKey: `…${machine.license_key.slice(-4)}`,
        machineId: machine.machine_id,
        reason: `not seen for ${at.days} days`,
        lastSeenAt: new Date(machine.last_seen_at).toISOString(),
      },
      at.now,
    );
    await emitWebhookEvent(
      trx,
      {
        type: "machine.lease_expired",
        product: machine.product,
        data: {
          licenseKey: machine.license_key,
          product: machine.product,
          machineId: machine.machine_id,
          lastSeenAt: new Date(machine.last_seen_at).toISOString(),
          leaseDays: at.days,
        },
      },
      at.now,
    );
    return true;
  });
}
