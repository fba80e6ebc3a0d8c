import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { isoOrNull } from "../../lib/time.js";
import { assertMaxLength, limits } from "../limits.js";
import { assertLicenseUsable, requireLicenseByKey } from "./license-record.js";

export interface ValidateInput {
  licenseKey: string;
  machineId: string;
  productSlug: string;
}

export interface ValidateResult {
  edition: string | null;
  editionName: string | null;
  features: string[];
  expiresAt: string | null;
  maxMachines: number;
  activeMachines: number;
}

/** Checks the license and the machine's activation, and records that the machine was seen. */
export async function validateLicense(
  db: Kysely<DB>,
  input: ValidateInput,
  now = Date.now(),
): Promise<ValidateResult> {
  const license = await requireLicenseByKey(db, input.licenseKey);
  assertLicenseUsable(license, input.productSlug, now);
  assertMaxLength("machineId", input.machineId, limits.identifier);

  // An admin may have lowered maxMachines below the machines already active: the license is then
  // over its limit and no machine on it validates until enough are deactivated. Checked without
  // writing, so a refused validate leaves last-seen untouched.
  if (license.activeMachines > license.maxMachines) {
    const active = await db
      .selectFrom("activations")
      .select("id")
      .where("license_id", "=", license.id)
      .where("machine_id", "=", input.machineId)
      .where("deactivated_at", "is", null)
      .executeTakeFirst();
    if (!active) throw ShipkeyError.spec("MACHINE_NOT_ACTIVATED", { canActivate: false });
    throw ShipkeyError.spec("MAX_MACHINES_REACHED");
  }
  const seen = await db
    .updateTable("activations")
    .set({ last_seen_at: now })
    .where("license_id", "=", license.id)
    .where("machine_id", "=", input.machineId)
    .where("deactivated_at", "is", null)
    .executeTakeFirst();
  if (seen.numUpdatedRows === 0n) {
    throw ShipkeyError.spec("MACHINE_NOT_ACTIVATED", {
      canActivate: license.activeMachines < license.maxMachines,
    });
  }
  return {
    edition: license.edition,
    editionName: license.editionName,
    features: license.features,
    expiresAt: isoOrNull(license.expiresAt),
    maxMachines: license.maxMachines,
    activeMachines: license.activeMachines,
  };
}
