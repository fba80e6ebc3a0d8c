import {
  type LicenseSettingName,
  licenseSettings,
  type LicenseSettingsTable,
} from "../../../contracts/license-settings.js";
import { type FormField, settingsOf, type SettingValue } from "../../../contracts/settings.js";
import type { LicenseView } from "../../../domain/licenses/license-views.js";
import { licenseSettingsErrors } from "../../../domain/licenses/manage-licenses.js";
import type { ShipkeyError } from "../../../errors.js";
import { type Html, html } from "../html.js";
import { type Form, FormCheck } from "../page-kit.js";
import { fieldText, settingFrom, settingInput, standInOf } from "../setting-fields.js";

// The license form's settings (the new-license form and a license's edit form): every setting
// of contracts/license-settings.ts that has a form field, read, checked and shown from it.

/** The settings the form shows: those the table gives a field. */
type FormSettingName = {
  [K in LicenseSettingName]: LicenseSettingsTable[K] extends { form: FormField } ? K : never;
}[LicenseSettingName];
type FormSettings = { [K in FormSettingName]: SettingValue<LicenseSettingsTable[K]> };

const formSettings = settingsOf(licenseSettings).flatMap(([name, setting]) =>
  setting.form ? [{ name, setting, field: setting.form }] : [],
);

/** The fields a refusal may name beside its input: the key, the product and every setting. */
export const licenseFields = ["productSlug", "licenseKey", ...Object.keys(licenseSettings)];

/**
 * Where the fields go, row by row; a row of several is a grid. A setting with a field that no
 * row names gets a row of its own at the end.
 */
const layout: ReadonlyArray<readonly FormSettingName[]> = [
  ["maxMachines", "expiresAt", "edition", "editionName"],
  ["features"],
  ["customerName", "customerEmail"],
  ["externalId"],
  ["maxDeactivationsPer30Days"],
  ["note"],
];

/**
 * The license settings the form gives, every invalid field refused at once (with `more`, the
 * refusals of fields beyond the settings).
 */
export function settingsFrom(form: Form, more: readonly ShipkeyError[] = []): FormSettings {
  const check = new FormCheck();
  const settings = Object.fromEntries(
    formSettings.map(({ name, setting }) => [
      name,
      check.field(() => settingFrom(form, name, setting), standInOf(setting)),
    ]),
  ) as FormSettings;
  check.add(licenseSettingsErrors(settings));
  check.add(more);
  check.done();
  return settings;
}

/** The form's values for a license as stored. */
export function formOf(license: LicenseView): Form {
  return Object.fromEntries(
    formSettings.map(({ name, setting }) => [name, fieldText(setting, license[name])]),
  );
}

/** The settings' inputs, filled from `form`, each with its refusal beside it. */
export function settingsInputs(form: Form, errors: Record<string, string>): Html {
  const placed = new Set<string>(layout.flat());
  const rows = [
    ...layout,
    ...formSettings.filter(({ name }) => !placed.has(name)).map(({ name }) => [name]),
  ];
  const input = (name: string) => {
    const one = formSettings.find((s) => s.name === name);
    return one ? settingInput(name, one.setting, one.field, form, errors) : "";
  };
  return html`${rows.map((row) =>
    row.length > 1 ? html`<div class="grid-2">${row.map(input)}</div>` : input(row[0] ?? ""),
  )}`;
}
