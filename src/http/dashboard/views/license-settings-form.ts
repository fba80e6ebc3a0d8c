import { licenseSettings, type LicenseSettingsTable } from "../../../contracts/license-settings.js";
import type { LicenseView } from "../../../domain/licenses/license-views.js";
import type { Form } from "../form-body.js";
import { type Html, html } from "../html.js";
import { fieldText, type FormSettingName, formSettingsOf, settingInput } from "./setting-fields.js";

// The license settings form's inputs (the new-license form and a license's edit form), and the
// values that fill them for a license as stored: every setting of contracts/license-settings.ts
// that has a field, as the table describes it; pages/license-settings-form.ts reads it.

/** The license settings that have a field, in the table's order. */
export const licenseFormSettings = formSettingsOf(licenseSettings);

/**
 * Where the fields go, row by row; a row of several is a grid. A setting with a field that no
 * row names gets a row of its own at the end.
 */
const layout: ReadonlyArray<readonly FormSettingName<LicenseSettingsTable>[]> = [
  ["maxMachines", "expiresAt", "edition", "editionName"],
  ["features"],
  ["customerName", "customerEmail"],
  ["externalId"],
  ["maxDeactivationsPer30Days"],
  ["note"],
];

/** The settings' inputs, filled from `form`, each with its refusal beside it. */
export function settingsInputs(form: Form, errors: Record<string, string>): Html {
  const placed = new Set<string>(layout.flat());
  const rows = [
    ...layout,
    ...licenseFormSettings.filter(({ name }) => !placed.has(name)).map(({ name }) => [name]),
  ];
  const input = (name: string) => {
    const one = licenseFormSettings.find((s) => s.name === name);
    return one ? settingInput(one, form, errors) : "";
  };
  return html`${rows.map((row) =>
    row.length > 1 ? html`<div class="grid-2">${row.map(input)}</div>` : input(row[0] ?? ""),
  )}`;
}

/** The edit form's values for a license as stored. */
export function formOf(license: LicenseView): Form {
  return Object.fromEntries(
    licenseFormSettings.map(({ name, setting }) => [name, fieldText(setting, license[name])]),
  );
}
