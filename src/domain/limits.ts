import { ShipkeyError } from "../errors.js";
import {
  hasControlCharacter,
  hasControlCharacterBesidesLineBreaks,
} from "../lib/control-characters.js";

/**
 * The assert* functions below name `field` in their message and carry it as the error's `field`
 * (errors.ts); `path` is the field's path when the message names it otherwise (an element of a
 * list: "feature" in the message, `features[2]` as the path).
 */
export function assertMaxLength(
  field: string,
  value: string | null | undefined,
  max: number,
  path = field,
): void {
  if (value !== null && value !== undefined && value.length > max) {
    throw new ShipkeyError("FIELD_TOO_LONG", `${field} must be at most ${max} characters`, {
      field: path,
    });
  }
}

/**
 * A name or label (product name, machine name, customer name, API key name, ...): one line of
 * text, so no control character at all (C0, DEL, C1, U+2028, U+2029). docs/reference/security.md.
 */
export function assertSingleLine(
  field: string,
  value: string | null | undefined,
  path = field,
): void {
  if (value !== null && value !== undefined && hasControlCharacter(value)) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${field} must not contain control characters`, {
      field: path,
    });
  }
}

/** A note (a license's note): tabs and line breaks, but no other control character. */
export function assertMultiLine(field: string, value: string | null | undefined): void {
  if (value !== null && value !== undefined && hasControlCharacterBesidesLineBreaks(value)) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `${field} must not contain control characters other than tabs and line breaks`,
      { field },
    );
  }
}
