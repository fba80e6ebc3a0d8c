import type { ExpressionBuilder, Kysely, Transaction } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { isoOrNull, toIso } from "../../lib/time.js";
import { lockLicense } from "./license-record.js";
import type { OfflinePlace } from "../../contracts/machines.js";

/**
 * A machine that is not active on the license but holds an unexpired certificate keeps running
 * offline until the certificate's exp: it holds an offline place until then. Active machines plus
 * offline places never exceed maxMachines + the product's offline allowance (writeActivation).
 * This is the condition on a `license_certificates` row, beside `expires_at > now`.
 */
function machineNotActive(eb: ExpressionBuilder<DB, "license_certificates">) {
  return eb.not(
    eb.exists(
      eb
        .selectFrom("activations")
        .select(eb.lit(1).as("one"))
        .whereRef("activations.license_id", "=", "license_certificates.license_id")
        .whereRef("activations.machine_id", "=", "license_certificates.machine_id")
        .where("activations.deactivated_at", "is", null),
    ),
  );
}

export interface SeatRoom {
  activeMachines: number;
  maxMachines: number;
  offlineAllowance: number;
  offlinePlaces: number;
}

/**
 * The license's machine counts and its offline places; null when the license is gone. `asker`'s
 * own place, if it holds one, is left out: activating it turns that place back into an active
 * machine, so it stands in no one's way.
 */
export async function seatRoom(
  db: Kysely<DB>,
  licenseId: string,
  now: number,
  asker?: string,
): Promise<SeatRoom | null> {
  const row = await db
    .selectFrom("licenses")
    .innerJoin("products", "products.id", "licenses.product_id")
    .select((eb) => [
      "licenses.active_machines",
      "licenses.max_machines",
      "products.offline_allowance",
      eb
        .selectFrom("license_certificates")
        .select((c) => c.fn.countAll<number | string | bigint>().as("n"))
        .whereRef("license_certificates.license_id", "=", "licenses.id")
        .where("license_certificates.expires_at", ">", now)
        .where(machineNotActive)
        .$if(asker !== undefined, (q) =>
          q.where("license_certificates.machine_id", "!=", asker ?? ""),
        )
        .as("places"),
    ])
    .where("licenses.id", "=", licenseId)
    .executeTakeFirst();
  if (!row) return null;
  return {
    activeMachines: row.active_machines,
    maxMachines: row.max_machines,
    offlineAllowance: row.offline_allowance,
    offlinePlaces: Number(row.places ?? 0),
  };
}

/**
 * Whether `asker`, not active on the license, may activate now: a free slot, and room beside the
 * offline places (its own left out). What MACHINE_NOT_ACTIVATED's `canActivate` says.
 */
export async function canActivateNow(
  db: Kysely<DB>,
  licenseId: string,
  now: number,
  asker: string,
): Promise<boolean> {
  const room = await seatRoom(db, licenseId, now, asker);
  return (
    room !== null &&
    room.activeMachines < room.maxMachines &&
    room.activeMachines + room.offlinePlaces < room.maxMachines + room.offlineAllowance
  );
}

/** Whether the machines running now (active + offline places) fit the license. */
export function withinSeats(room: SeatRoom): boolean {
  return room.activeMachines + room.offlinePlaces <= room.maxMachines + room.offlineAllowance;
}

/** The offline places a license's page and answer list: the soonest to end first. */
export const listedOfflinePlaces = 200;

/** The license's offline places, the soonest to end first, with what the machine last reported. */
export async function listOfflinePlaces(
  db: Kysely<DB>,
  licenseId: string,
  now: number,
): Promise<OfflinePlace[]> {
  const rows = await db
    .selectFrom("license_certificates")
    .select(["machine_id", "issued_at", "expires_at"])
    .where("license_id", "=", licenseId)
    .where("expires_at", ">", now)
    .where(machineNotActive)
    .orderBy("expires_at")
    .orderBy("machine_id")
    .limit(listedOfflinePlaces)
    .execute();
  if (rows.length === 0) return [];
  const ended = await db
    .selectFrom("activations")
    .select(["machine_id", "machine_name", "platform", "deactivated_at"])
    .where("license_id", "=", licenseId)
    .where(
      "machine_id",
      "in",
      rows.map((r) => r.machine_id),
    )
    .where("deactivated_at", "is not", null)
    .orderBy("deactivated_at")
    .execute();
  // The latest ended activation of each machine names it.
  const last = new Map(ended.map((a) => [a.machine_id, a]));
  return rows.map((r) => {
    const activation = last.get(r.machine_id);
    return {
      machineId: r.machine_id,
      machineName: activation?.machine_name ?? null,
      platform: activation?.platform ?? null,
      deactivatedAt: isoOrNull(activation?.deactivated_at ?? null),
      certificateIssuedAt: toIso(r.issued_at),
      endsAt: toIso(r.expires_at),
    };
  });
}

/**
 * Ends a machine's offline place before its certificate expires (a stolen laptop): the
 * certificate keeps working offline, but the server no longer counts it. 404
 * OFFLINE_PLACE_NOT_FOUND when the machine holds none (active, or its certificate expired). Under
 * the license row's lock, as activations and checkouts of the license are.
 */
export async function endOfflinePlace(
  trx: Transaction<DB>,
  licenseId: string,
  machineId: string,
  now: number,
): Promise<{ endsAt: string }> {
  await lockLicense(trx, { licenseId });
  const [ended] = await trx
    .deleteFrom("license_certificates")
    .where("license_id", "=", licenseId)
    .where("machine_id", "=", machineId)
    .where("expires_at", ">", now)
    .where(machineNotActive)
    .returning("expires_at")
    .execute();
  if (!ended) {
    throw new ShipkeyError(
      "OFFLINE_PLACE_NOT_FOUND",
      "The machine holds no offline place on this license",
    );
  }
  return { endsAt: toIso(ended.expires_at) };
}
