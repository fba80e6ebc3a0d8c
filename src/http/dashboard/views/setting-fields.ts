import {
  type FormField,
  type Setting,
  type SettingsTable,
  settingsOf,
} from "../../../contracts/settings.js";
import { type Form, text } from "../form-body.js";
import { fieldError, type Html, html } from "../html.js";

// A setting's dashboard field, from its entry in a settings table (contracts/settings.ts): which
// settings have one, its label and hint, the input its kind gives, and the text that fills it.
// The form is read back through formBody against the admin API's body.

/** The names of a table's settings that have a dashboard field. */
export type FormSettingName<T extends SettingsTable> = {
  [K in keyof T & string]: T[K] extends { form: FormField } ? K : never;
}[keyof T & string];

/** A setting with a field, as the table gives it. */
export interface FormSetting<N extends string = string> {
  name: N;
  setting: Setting;
  field: FormField;
}

/** A table's settings that have a field, in the table's order. */
export const formSettingsOf = <T extends SettingsTable>(table: T) =>
  settingsOf(table).flatMap(([name, setting]) =>
    setting.form ? [{ name, setting, field: setting.form }] : [],
  ) as Array<FormSetting<FormSettingName<T>>>;

/** The text that fills the setting's field for a value as the admin API shows it. */
export function fieldText(setting: Setting, value: unknown): string {
  if (value === null || value === undefined) return "";
  if (setting.kind === "time" && typeof value === "string") return localValue(value);
  if (Array.isArray(value)) return value.join(", ");
  return String(value);
}

/** "2026-11-21T15:12:50.056Z" → "2026-11-21T15:12" for a datetime-local input. */
function localValue(iso: string): string {
  return iso.slice(0, 16);
}

/**
 * The setting's labelled input, filled from `form`, with its refusal beside it: a number for a
 * count, a date and time for a time, a textarea for several lines of text, a list of choices
 * for a choice, one line of text otherwise (a list comma-separated).
 */
export function settingInput(
  { name, setting, field }: FormSetting,
  form: Form,
  errors: Record<string, string>,
): Html {
  const label = setting.label ?? name;
  const hint = field.hint ? html` <span class="hint">${field.hint}</span>` : "";
  const invalid = errors[name] ? html`aria-invalid="true" aria-describedby="${name}-error"` : "";
  if (setting.kind === "text" && setting.format === "lines") {
    return html`<label
      >${label}${hint}
      <textarea name="${name}" rows="3">${text(form, name)}</textarea
      >${fieldError(errors, name)}</label
    >`;
  }
  if (setting.kind === "choice") {
    const current = text(form, name);
    return html`<label
      >${label}${hint}
      <select name="${name}" ${invalid}>
        ${setting.values.map(
          (value) =>
            html`<option value="${value}" ${value === current ? "selected" : ""}>${value}</option>`,
        )}
      </select>
      ${fieldError(errors, name)}</label
    >`;
  }
  return html`<label
    >${label}${hint}
    <input name="${name}" type="${inputType(setting)}" value="${text(form, name)}" ${invalid} />
    ${fieldError(errors, name)}</label
  >`;
}

function inputType(setting: Setting): string {
  if (setting.kind === "count") return "number";
  if (setting.kind === "time") return "datetime-local";
  if (setting.kind === "text" && setting.format === "email") return "email";
  return "text";
}
