import { compileOnce } from "../../db/compiled-query.js";
import { inTransaction } from "../../db/transaction.js";
import type { Kysely, Transaction } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { assertMaxLength, limits } from "../limits.js";
import { requireLicenseByKey } from "./license-record.js";

export interface DeactivateInput {
  licenseKey: string;
  machineId: string;
}

/**
 * Ends the machine's active activation (kept as history) and frees its slot. Works whatever the
 * license's status or expiry: a customer must always be able to free a slot.
 */
export async function deactivateMachine(
  db: Kysely<DB>,
  input: DeactivateInput,
  now = Date.now(),
): Promise<{ machineId: string }> {
  const license = await requireLicenseByKey(db, input.licenseKey);
  assertMaxLength("machineId", input.machineId, limits.identifier);
  await inTransaction(db, (trx) => endActivation(trx, license.id, input.machineId, now));
  return { machineId: input.machineId };
}

/**
 * Ends one active activation and decrements the slot counter in one transaction. The conditional
 * UPDATE means that of several concurrent calls exactly one sees a row change; the rest get 404.
 */
export async function endActivation(
  trx: Transaction<DB>,
  licenseId: string,
  machineId: string,
  now: number,
): Promise<void> {
  const ended = await endActiveActivation(trx, { licenseId, machineId, now });
  if (!ended.numAffectedRows) throw ShipkeyError.spec("ACTIVATION_NOT_FOUND");
  await freeSlot(trx, { licenseId });
}

const endActiveActivation = compileOnce<
  { licenseId: string; machineId: string; now: number },
  never
>(["licenseId", "machineId", "now"], (db, p) =>
  db
    .updateTable("activations")
    .set({ deactivated_at: p.now })
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
