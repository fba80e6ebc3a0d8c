import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { isoOrNull } from "../../lib/time.js";
import { assertMaxLength } from "../limits.js";
import { assertLicenseUsable, requireLicenseWithActivation } from "./license-record.js";
import { limits } from "../../contracts/vocabulary.js";
import type { ValidateAnswer, ValidateRequest } from "../../contracts/license-api.js";
import { canActivateNow } from "./offline-places.js";

/**
 * A validation as the route hands it on (ValidateRequest); appVersion, the app's version the SDK
 * reported, parsed (semver) or null, is stored with last-seen.
 */
export type ValidateInput = ValidateRequest;

/** Validate's answer, but for its `valid: true`. */
export type ValidateResult = Omit<ValidateAnswer, "valid">;

/**
 * Where validate records that a machine was seen (see LastSeenBuffer): the time, and the app's
 * version when reported, go to the machine's active activation on the license.
 */
export interface LastSeenRecorder {
  record(licenseId: string, machineId: string, at: number, appVersion?: string | null): void;
}

/** Checks the license and the machine's activation, and records that the machine was seen. */
export async function validateLicense(
  db: Kysely<DB>,
  input: ValidateInput,
  lastSeen: LastSeenRecorder,
  now = Date.now(),
): Promise<ValidateResult> {
  return (await validateLicenseOf(db, input, lastSeen, now)).result;
}

/** validateLicense's checks and answer, with the id of the license (for checkout). */
export async function validateLicenseOf(
  db: Kysely<DB>,
  input: ValidateInput,
  lastSeen: LastSeenRecorder,
  now = Date.now(),
): Promise<{ licenseId: string; result: ValidateResult }> {
  const { license, machineActive } = await requireLicenseWithActivation(db, input);
  assertLicenseUsable(license, input.productSlug, now);
  assertMaxLength("machineId", input.machineId, limits.identifier);

  if (!machineActive) {
    throw ShipkeyError.spec("MACHINE_NOT_ACTIVATED", {
      canActivate: await canActivateNow(db, license.id, now, input.machineId),
    });
  }
  // An admin may have lowered maxMachines below the machines already active: the license is then
  // over its limit and no machine on it validates until enough are deactivated. A refused
  // validate leaves last-seen untouched.
  if (license.activeMachines > license.maxMachines) {
    throw ShipkeyError.spec("MAX_MACHINES_REACHED");
  }
  lastSeen.record(license.id, input.machineId, now, input.appVersion ?? null);
  return {
    licenseId: license.id,
    result: {
      edition: license.edition,
      editionName: license.editionName,
      features: license.features,
      expiresAt: isoOrNull(license.expiresAt),
      maxMachines: license.maxMachines,
      activeMachines: license.activeMachines,
    },
  };
}
