import { ShipkeyError } from "../errors.js";
import {
  hasControlCharacter,
  hasControlCharacterBesidesLineBreaks,
} from "../lib/control-characters.js";

/** Documented request limits (docs/reference/limits.md). Column sizes in the schema match these. */
export const limits = {
  identifier: 255,
  machineName: 255,
  platform: 255,
  name: 255,
  edition: 255,
  feature: 255,
  features: 100,
  downloadUrl: 2048,
  signature: 8 * 1024,
  tauriPublicKey: 1024,
  releaseNotes: 64 * 1024,
  note: 4096,
  releasesPerPublish: 50,
  licenseBodyBytes: 64 * 1024,
  publishBodyBytes: 1024 * 1024,
} as const;

export function assertMaxLength(
  field: string,
  value: string | null | undefined,
  max: number,
): void {
  if (value !== null && value !== undefined && value.length > max) {
    throw new ShipkeyError("FIELD_TOO_LONG", `${field} must be at most ${max} characters`);
  }
}

/**
 * A name or label (product name, machine name, customer name, API key name, ...): one line of
 * text, so no control character at all (C0, DEL, C1, U+2028, U+2029). docs/reference/security.md.
 */
export function assertSingleLine(field: string, value: string | null | undefined): void {
  if (value !== null && value !== undefined && hasControlCharacter(value)) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${field} must not contain control characters`);
  }
}

/** A note (a license's note): tabs and line breaks, but no other control character. */
export function assertMultiLine(field: string, value: string | null | undefined): void {
  if (value !== null && value !== undefined && hasControlCharacterBesidesLineBreaks(value)) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `${field} must not contain control characters other than tabs and line breaks`,
    );
  }
}
