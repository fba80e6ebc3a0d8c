import type { FormField, Setting, SettingValue } from "../../contracts/settings.js";
import { fieldError, type Html, html } from "./html.js";
import { expiryFrom, type Form, integerFrom, localValue, text } from "./page-kit.js";

// A setting's form field, from its kind (contracts/settings.ts): the input that shows it, the
// value it gives and the text that fills it.

/**
 * The setting's value as its field gives it: a count a whole number ("" is null where null is
 * a value), a time a date and time ("" is never), text "" as null, a list comma-separated.
 * A field that cannot be read throws its refusal, naming the field.
 */
export function settingFrom<S extends Setting>(
  form: Form,
  name: string,
  setting: S,
): SettingValue<S>;
export function settingFrom(form: Form, name: string, setting: Setting): unknown {
  const typed = text(form, name);
  switch (setting.kind) {
    case "count":
      return setting.nullable && typed === "" ? null : integerFrom(form, name);
    case "time":
      return expiryFrom(form, name);
    case "text":
      return typed || null;
    case "list":
      return typed
        .split(",")
        .map((item) => item.trim())
        .filter((item) => item !== "");
    case "choice":
      return typed;
  }
}

/** A value that passes the setting's checks, standing in for one its field refused. */
export function standInOf(setting: Setting): unknown {
  if (setting.kind === "count") return setting.nullable ? null : setting.min;
  if (setting.kind === "list") return [];
  return null;
}

/** The text that fills the setting's field for a value as the admin API shows it. */
export function fieldText(setting: Setting, value: unknown): string {
  if (value === null || value === undefined) return "";
  if (setting.kind === "time" && typeof value === "string") return localValue(value);
  if (Array.isArray(value)) return value.join(", ");
  return String(value);
}

/** The setting's labelled input (a textarea for several lines), with its refusal beside it. */
export function settingInput(
  name: string,
  setting: Setting,
  field: FormField,
  form: Form,
  errors: Record<string, string>,
): Html {
  if (setting.kind === "text" && setting.format === "lines") {
    return html`<label
      >${setting.label ?? name}
      <textarea name="${name}" rows="3">${text(form, name)}</textarea
      >${fieldError(errors, name)}</label
    >`;
  }
  return html`<label
    >${setting.label ?? name}${field.hint ? html` <span class="hint">${field.hint}</span>` : ""}
    <input
      name="${name}"
      type="${inputType(setting)}"
      value="${text(form, name)}"
      ${errors[name] ? html`aria-invalid="true" aria-describedby="${name}-error"` : ""}
    />
    ${fieldError(errors, name)}</label
  >`;
}

function inputType(setting: Setting): string {
  if (setting.kind === "count") return "number";
  if (setting.kind === "time") return "datetime-local";
  if (setting.kind === "text" && setting.format === "email") return "email";
  return "text";
}
