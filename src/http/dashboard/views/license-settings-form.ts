import type { LicenseView } from "../../../domain/licenses/license-views.js";
import { type Form, text } from "../form-body.js";
import { fieldError, type Html, html } from "../html.js";

// The license settings form's inputs (the new-license form and a license's edit form), and the
// values that fill them for a license as stored; pages/license-settings-form.ts reads it.

/** The settings' inputs, filled from `form`, each with its refusal beside it. */
export function settingsInputs(form: Form, errors: Record<string, string>): Html {
  const input = (name: string, label: string, type = "text", hint = "") =>
    html`<label
      >${label}${hint ? html` <span class="hint">${hint}</span>` : ""}
      <input
        name="${name}"
        type="${type}"
        value="${text(form, name)}"
        ${errors[name] ? html`aria-invalid="true" aria-describedby="${name}-error"` : ""}
      />
      ${fieldError(errors, name)}</label
    >`;
  return html`<div class="grid-2">
      ${input("maxMachines", "Machine slots", "number")}
      ${input("expiresAt", "Expires", "datetime-local", "(UTC, empty = never)")}
      ${input("edition", "Edition", "text", "(e.g. pro)")}
      ${input("editionName", "Edition name", "text", "(e.g. Professional)")}
    </div>
    ${input("features", "Features", "text", "(comma-separated)")}
    <div class="grid-2">
      ${input("customerName", "Customer name")} ${input("customerEmail", "Customer email", "email")}
    </div>
    ${input("externalId", "External id", "text", "(e.g. an order id; unique per product)")}
    ${input(
      "maxDeactivationsPer30Days",
      "Deactivations by the app in 30 days",
      "number",
      "(empty = the product's limit)",
    )}
    <label
      >Note
      <textarea name="note" rows="3">${text(form, "note")}</textarea
      >${fieldError(errors, "note")}</label
    >`;
}

/** The edit form's values for a license as stored. */
export function formOf(license: LicenseView): Form {
  return {
    maxMachines: String(license.maxMachines),
    expiresAt: localValue(license.expiresAt),
    edition: license.edition ?? "",
    editionName: license.editionName ?? "",
    features: license.features.join(", "),
    customerName: license.customerName ?? "",
    customerEmail: license.customerEmail ?? "",
    note: license.note ?? "",
    externalId: license.externalId ?? "",
    maxDeactivationsPer30Days:
      license.maxDeactivationsPer30Days === null ? "" : String(license.maxDeactivationsPer30Days),
  };
}

/** "2026-11-21T15:12:50.056Z" → "2026-11-21T15:12" for a datetime-local input. */
function localValue(iso: string | null): string {
  return iso === null ? "" : iso.slice(0, 16);
}
