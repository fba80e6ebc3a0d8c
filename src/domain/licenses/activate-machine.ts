import type { Kysely, Transaction } from "kysely";
import { compileOnce } from "../../db/compiled-query.js";
import type { ActivationsTable, DB, LicensesTable } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { newId } from "../../lib/ids.js";
import { toIso } from "../../lib/time.js";
import { assertMaxLength, assertSingleLine } from "../limits.js";
import { limits } from "../../contracts/vocabulary.js";
import type { Activation } from "../../contracts/license-api.js";
import { seatRoom, withinSeats } from "./offline-places.js";

export interface ActivateInput {
  licenseKey: string;
  machineId: string;
  productSlug: string;
  machineName: string | null;
  platform: string | null;
  /** The app's version the SDK reported (parsed: semver), or null (the stored one stays). */
  appVersion?: string | null;
}

export type ActivationView = Activation;

export type ActivateResult =
  | {
      outcome: "activated";
      activation: ActivationView;
      activeMachines: number;
      maxMachines: number;
    }
  | { outcome: "already-activated"; activation: ActivationView };

/**
 * Activate's checks of the request's own fields, after the license's (the spec's order): their
 * lengths, and machineName and platform on one line.
 */
export function assertActivationFields(input: ActivateInput): void {
  assertMaxLength("machineId", input.machineId, limits.identifier);
  assertMaxLength("machineName", input.machineName, limits.machineName);
  assertMaxLength("platform", input.platform, limits.platform);
  assertSingleLine("machineName", input.machineName);
  assertSingleLine("platform", input.platform);
}

/**
 * Writes the machine's activation and takes its slot, in the caller's transaction. The slot
 * limit is enforced by the database: the activation row is guarded by a partial unique index on
 * the active (license, machine) pair, and the slot counter moves by a conditional UPDATE in the
 * same transaction, so it holds across processes sharing one database. Deactivated machines
 * still running on an unexpired certificate count too: active machines plus those offline places
 * stay within maxMachines + the product's offline allowance. MAX_MACHINES_REACHED is thrown, so
 * the transaction rolls the row back; a concurrent activation of this machine that won makes
 * this one "already-activated".
 */
export async function writeActivation(
  trx: Transaction<DB>,
  licenseId: string,
  input: ActivateInput,
  now: number,
): Promise<ActivateResult> {
  const activation = {
    id: newId("act"),
    license_id: licenseId,
    machine_id: input.machineId,
    machine_name: input.machineName,
    platform: input.platform,
    activated_at: now,
    last_seen_at: now,
    deactivated_at: null,
    app_version: input.appVersion ?? null,
  };
  // The partial unique index arbitrates concurrent activations of this machine. A conflict
  // whose winner is already gone again (deactivated in between) is retried: the next attempt
  // no longer conflicts. Each statement sees newly committed rows (READ COMMITTED).
  for (let attempt = 1; ; attempt++) {
    const { rows: inserted } = await insertActivation(trx, activation);
    if (inserted.length > 0) break;
    const winner = await touchActiveActivation(trx, licenseId, input, now);
    if (winner) return { outcome: "already-activated" as const, activation: winner };
    if (attempt === 5) throw new Error("activation kept conflicting with vanishing activations");
  }
  const [counted] = (await takeSlot(trx, { licenseId })).rows;
  // Throwing rolls back the activation row inserted above.
  if (!counted) throw ShipkeyError.spec("MAX_MACHINES_REACHED");
  // The slot counter's update holds the license row: machines running offline on a
  // certificate (offline places) are counted under that lock, so concurrent activations,
  // checkouts and deactivations of the license see each other.
  const room = await seatRoom(trx, licenseId, now);
  if (room && !withinSeats(room)) throw ShipkeyError.spec("MAX_MACHINES_REACHED");
  return {
    outcome: "activated",
    activation: toActivationView(activation),
    activeMachines: counted.active_machines,
    maxMachines: counted.max_machines,
  };
}

type NewActivation = Omit<ActivationsTable, "deactivated_at" | "deactivated_by">;

const insertActivation = compileOnce<NewActivation, { id: string }>(
  [
    "id",
    "license_id",
    "machine_id",
    "machine_name",
    "platform",
    "activated_at",
    "last_seen_at",
    "app_version",
  ],
  (db, p) =>
    db
      .insertInto("activations")
      .values({ ...p, deactivated_at: null })
      .onConflict((oc) =>
        oc.columns(["license_id", "machine_id"]).where("deactivated_at", "is", null).doNothing(),
      )
      .returning("id"),
);

// The slot counter moves only while below the limit.
const takeSlot = compileOnce<
  { licenseId: string },
  Pick<LicensesTable, "active_machines" | "max_machines">
>(["licenseId"], (db, p) =>
  db
    .updateTable("licenses")
    .set((eb) => ({ active_machines: eb("active_machines", "+", 1) }))
    .where("id", "=", p.licenseId)
    .whereRef("active_machines", "<", "max_machines")
    .returning(["active_machines", "max_machines"]),
);

// A reported app version replaces the stored one; none (null) keeps it.
const touchActivation = compileOnce<
  { licenseId: string; machineId: string; now: number; appVersion: string | null },
  Pick<ActivationsTable, "machine_id" | "machine_name" | "activated_at">
>(["licenseId", "machineId", "now", "appVersion"], (db, p) =>
  db
    .updateTable("activations")
    .set((eb) => ({
      last_seen_at: p.now,
      app_version: eb.fn.coalesce(eb.val(p.appVersion), "app_version"),
    }))
    .where("license_id", "=", p.licenseId)
    .where("machine_id", "=", p.machineId)
    .where("deactivated_at", "is", null)
    .returning(["machine_id", "machine_name", "activated_at"]),
);

/**
 * Marks the machine's active activation as seen now (with the app version it reported) and
 * returns it, or null if there is none. Written at once, not buffered: activate is rare.
 */
export async function touchActiveActivation(
  db: Kysely<DB>,
  licenseId: string,
  input: Pick<ActivateInput, "machineId" | "appVersion">,
  now: number,
): Promise<ActivationView | null> {
  const { machineId } = input;
  const appVersion = input.appVersion ?? null;
  const [row] = (await touchActivation(db, { licenseId, machineId, now, appVersion })).rows;
  return row ? toActivationView(row) : null;
}

function toActivationView(row: {
  machine_id: string;
  machine_name: string | null;
  activated_at: number;
}): ActivationView {
  return {
    machineId: row.machine_id,
    machineName: row.machine_name,
    activatedAt: toIso(row.activated_at),
  };
}
