import { maskLicenseKey } from "../licenses/license-key.js";

/**
 * The fields of a license that name its customer, or may (the note is free text, the external id
 * an order or CRM id): left out of a payload shown or sent without licenses:read.
 */
const customerFields: ReadonlySet<string> = new Set([
  "customerName",
  "customerEmail",
  "note",
  "externalId",
]);

/**
 * A delivery's payload as a caller without licenses:read sees it: every `licenseKey` masked as
 * the audit log masks it (its last four characters), and the customer's name and e-mail, the
 * license's note and external id left out, wherever they are in the event's data. The fields
 * are removed rather than set to null, so a withheld e-mail never reads as a license without one.
 */
export function withoutLicenseData(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutLicenseData);
  if (typeof value !== "object" || value === null) return value;
  const kept: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(value)) {
    if (customerFields.has(name)) continue;
    kept[name] =
      name === "licenseKey" && typeof field === "string"
        ? maskLicenseKey(field)
        : withoutLicenseData(field);
  }
  return kept;
}
