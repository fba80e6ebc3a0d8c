import { createLicense } from "../../../contracts/licenses.js";
import {
  licenseSettingsErrors,
  type LicenseSettings,
} from "../../../domain/licenses/manage-licenses.js";
import type { ShipkeyError } from "../../../errors.js";
import { type Form, formBody } from "../form-body.js";

// The license settings form (the new-license form and a license's edit form), read as the
// admin API's body of a license (createLicense's; updateLicense's takes the same settings);
// views/license-settings-form.ts shows it.

/** The fields a refusal may name beside its input: the key, the product and every setting. */
export const licenseFields = [
  "productSlug",
  "licenseKey",
  "maxMachines",
  "status",
  "expiresAt",
  "edition",
  "editionName",
  "features",
  "customerName",
  "customerEmail",
  "note",
  "externalId",
  "maxDeactivationsPer30Days",
];

/** The settings the form has. */
const settingFields = [
  "maxMachines",
  "expiresAt",
  "edition",
  "editionName",
  "features",
  "customerName",
  "customerEmail",
  "note",
  "externalId",
  "maxDeactivationsPer30Days",
] as const;

/**
 * The license settings the form gives, as the domain takes them, every invalid field refused at
 * once (with `more`, the refusals of fields beyond the settings).
 */
export async function settingsFrom(
  form: Form | undefined,
  more: readonly ShipkeyError[] = [],
): Promise<LicenseSettings & { maxMachines: number }> {
  const toSettings = <T extends { expiresAt: string | null }>(body: T) => ({
    ...body,
    expiresAt: body.expiresAt === null ? null : Date.parse(body.expiresAt),
  });
  const body = await formBody(createLicense.schema.body, form, {
    fields: settingFields,
    dates: ["expiresAt"],
    checks: (read) => [...licenseSettingsErrors(toSettings(read)), ...more],
  });
  return toSettings(body);
}
