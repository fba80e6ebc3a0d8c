import { licenseSettings } from "../../../contracts/license-settings.js";
import { createLicense } from "../../../contracts/licenses.js";
import {
  licenseSettingsErrors,
  type LicenseSettings,
} from "../../../domain/licenses/manage-licenses.js";
import type { ShipkeyError } from "../../../errors.js";
import { type Form, formBody } from "../form-body.js";
import { licenseFormSettings } from "../views/license-settings-form.js";

// The license settings form (the new-license form and a license's edit form), read as the
// admin API's body of a license (createLicense's; updateLicense's takes the same settings);
// views/license-settings-form.ts shows it.

/** The fields a refusal may name beside its input: the key, the product and every setting. */
export const licenseFields = ["productSlug", "licenseKey", ...Object.keys(licenseSettings)];

/** The settings the form has: those the table gives a field. */
const settingFields = licenseFormSettings.map(({ name }) => name);

/** The settings typed as a date and time. */
const dateFields = licenseFormSettings.filter((s) => s.setting.kind === "time").map((s) => s.name);

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
    dates: dateFields,
    checks: (read) => [...licenseSettingsErrors(toSettings(read)), ...more],
  });
  return toSettings(body);
}
