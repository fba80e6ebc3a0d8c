import type { Kysely } from "kysely";
import { compileOnce } from "../../db/compiled-query.js";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { isoOrNull } from "../../lib/time.js";
import { assertMaxLength, limits } from "../limits.js";
import { assertLicenseUsable, selectLicenseForUse, toLicenseForUse } from "./license-record.js";

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

/** Where validate records that a machine was seen (see LastSeenBuffer). */
export interface LastSeenRecorder {
  record(activationId: string, at: number): void;
}

// One round trip: the license, its product's slug and the machine's active activation, if any
// (at most one, by the partial unique index).
const findLicenseAndActivation = compileOnce<
  { licenseKey: string; machineId: string },
  Parameters<typeof toLicenseForUse>[0] & { activation_id: string | null }
>(["licenseKey", "machineId"], (db, p) =>
  selectLicenseForUse(db)
    .leftJoin("activations", (join) =>
      join
        .onRef("activations.license_id", "=", "licenses.id")
        .on("activations.machine_id", "=", p.machineId)
        .on("activations.deactivated_at", "is", null),
    )
    .select("activations.id as activation_id")
    .where("licenses.license_key", "=", p.licenseKey),
);

/** Checks the license and the machine's activation, and records that the machine was seen. */
export async function validateLicense(
  db: Kysely<DB>,
  input: ValidateInput,
  lastSeen: LastSeenRecorder,
  now = Date.now(),
): Promise<ValidateResult> {
  const [row] =
    input.licenseKey.length > limits.identifier ? [] : await findLicenseAndActivation(db, input);
  if (!row) throw ShipkeyError.spec("LICENSE_NOT_FOUND");
  const license = toLicenseForUse(row);
  assertLicenseUsable(license, input.productSlug, now);
  assertMaxLength("machineId", input.machineId, limits.identifier);

  if (row.activation_id === null) {
    throw ShipkeyError.spec("MACHINE_NOT_ACTIVATED", {
      canActivate: license.activeMachines < license.maxMachines,
    });
  }
  // An admin may have lowered maxMachines below the machines already active: the license is then
  // over its limit and no machine on it validates until enough are deactivated. A refused
  // validate leaves last-seen untouched.
  if (license.activeMachines > license.maxMachines) {
    throw ShipkeyError.spec("MAX_MACHINES_REACHED");
  }
  lastSeen.record(row.activation_id, now);
  return {
    edition: license.edition,
    editionName: license.editionName,
    features: license.features,
    expiresAt: isoOrNull(license.expiresAt),
    maxMachines: license.maxMachines,
    activeMachines: license.activeMachines,
  };
}
