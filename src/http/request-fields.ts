import { ShipkeyError } from "../errors.js";

/**
 * Small readers for JSON request bodies that apply the documented input rules: a field that is
 * absent, null or "" is missing; after the missing-field check, a field of the wrong JSON type is
 * a 400 naming the field.
 */
export type JsonObject = Record<string, unknown>;

export function requireJsonObject(body: unknown): JsonObject {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ShipkeyError("BODY_NOT_OBJECT", "Request body must be a JSON object");
  }
  return body as JsonObject;
}

export function isMissing(value: unknown): boolean {
  return value === undefined || value === null || value === "";
}

/** Throws the spec's "Missing required fields" if any of `names` is missing. */
export function assertPresent(body: JsonObject, names: readonly string[]): void {
  if (names.some((name) => isMissing(body[name]))) {
    throw ShipkeyError.spec("MISSING_REQUIRED_FIELDS");
  }
}

export function requiredString(body: JsonObject, name: string): string {
  const value = body[name];
  if (typeof value !== "string") throw wrongType(name, "a string");
  return value;
}

/** An optional string: missing reads as null. */
export function optionalString(body: JsonObject, name: string): string | null {
  const value = body[name];
  if (isMissing(value)) return null;
  if (typeof value !== "string") throw wrongType(name, "a string");
  return value;
}

export function wrongType(name: string, expected: string): ShipkeyError {
  return new ShipkeyError("INVALID_FIELD_TYPE", `${name} must be ${expected}`);
}
