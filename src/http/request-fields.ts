import type { IncomingMessage } from "node:http";
import { ShipkeyError } from "../errors.js";
import { limits } from "../contracts/vocabulary.js";
import { normalizeVersion } from "../domain/releases/version.js";

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

/**
 * Throws the spec's "Missing required fields" if any of `names` is missing; its `fields` lists
 * every missing one, in the order of `names`.
 */
export function assertPresent(body: JsonObject, names: readonly string[]): void {
  const missing = names.filter((name) => isMissing(body[name]));
  if (missing.length > 0) throw missingFields(missing);
}

export function missingFields(fields: string[]): ShipkeyError {
  return ShipkeyError.spec("MISSING_REQUIRED_FIELDS", { fields });
}

/**
 * The one notation of a field's path in failure bodies: ["releases", "0", "downloadUrl"] →
 * "releases[0].downloadUrl", ["features", "2"] → "features[2]"; no segment → undefined.
 */
export function fieldPath(segments: readonly string[]): string | undefined {
  let path = "";
  for (const segment of segments) {
    path += /^\d+$/.test(segment) ? `[${segment}]` : path === "" ? segment : `.${segment}`;
  }
  return path === "" ? undefined : path;
}

export function requiredString(body: JsonObject, name: string): string {
  const value = body[name];
  if (typeof value !== "string") throw wrongType(name, "a string");
  return assertNoNul(name, value);
}

/** An optional string: missing reads as null. */
export function optionalString(body: JsonObject, name: string): string | null {
  const value = body[name];
  if (isMissing(value)) return null;
  if (typeof value !== "string") throw wrongType(name, "a string");
  return assertNoNul(name, value);
}

/**
 * PostgreSQL text cannot hold U+0000 and SQLite would store it; refusing it up front keeps the
 * two databases answering alike (400, never a 500).
 */
export function assertNoNul(name: string, value: string, path = name): string {
  if (value.includes("\u0000")) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${name} must not contain NUL characters`, {
      field: path,
    });
  }
  return value;
}

/**
 * appVersion, the app's version an SDK reports with activate, validate and checkout: the version
 * (semver, a leading "v" stripped) or null. It never refuses: a value that is not a string, is
 * longer than limits.appVersion or is not semver reads as not reported, so the answer is the one
 * the request gets without it (docs/reference/license-endpoints.md).
 */
export function reportedAppVersion(body: JsonObject): string | null {
  const value = body.appVersion;
  if (typeof value !== "string" || value.length > limits.appVersion) return null;
  return normalizeVersion(value);
}

export function wrongType(name: string, expected: string): ShipkeyError {
  return new ShipkeyError("INVALID_FIELD_TYPE", `${name} must be ${expected}`, { field: name });
}

/**
 * A header that must appear at most once. Node keeps only the first of repeated Authorization
 * headers; a request carrying two credentials is ambiguous, so it reads as having none.
 */
export function singleHeader(raw: IncomingMessage, name: string): string | undefined {
  let value: string | undefined;
  let seen = 0;
  for (let i = 0; i < raw.rawHeaders.length; i += 2) {
    if (raw.rawHeaders[i]?.toLowerCase() === name) {
      seen++;
      value = raw.rawHeaders[i + 1];
    }
  }
  return seen === 1 ? value : undefined;
}

/**
 * Where a NUL stands in a string, or in any key or value of an object (nesting bounded): the
 * path segments to it ([] for the value itself), or undefined when there is none.
 */
function nulAt(value: unknown, depth: number): string[] | undefined {
  if (typeof value === "string") return value.includes("\u0000") ? [] : undefined;
  if (depth > 20 || value === null || typeof value !== "object") return undefined;
  for (const [key, inner] of Object.entries(value)) {
    if (key.includes("\u0000")) return [];
    const below = nulAt(inner, depth + 1);
    if (below) return [key, ...below];
  }
  return undefined;
}

/**
 * Admin routes and dashboard pages: refuse any NUL character anywhere in the query, path
 * parameters or body (PostgreSQL cannot store or compare it). The spec endpoints check their
 * fields one by one instead, to keep the spec's check order.
 */
export function rejectNulInput(request: { query: unknown; params: unknown; body: unknown }): void {
  for (const part of [request.query, request.params, request.body]) {
    const at = nulAt(part, 0);
    if (at === undefined) continue;
    const field = fieldPath(at);
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      "The request contains a NUL character",
      field === undefined ? {} : { field },
    );
  }
}

/**
 * The update feeds and downloads, before anything parses the URL's values: rejectNulInUrl, and a
 * query value longer than any value they read (an identifier: 255 characters) is a 400, so no
 * pattern ever runs on a longer one. (The license endpoints and publish read no query value, so
 * the spec's answers stand whatever it holds.) Path
 * parameters are bounded by the router (maxParamLength, 256: longer is a 400 BAD_REQUEST).
 */
export function checkPublicUrl(
  request: { query: unknown; params: unknown },
  licenseKeyParam?: string,
): void {
  rejectNulInUrl(request, licenseKeyParam);
  if (typeof request.query !== "object" || request.query === null) return;
  for (const [name, value] of Object.entries(request.query)) {
    const values: unknown[] = Array.isArray(value) ? value : [value];
    if (values.some((v) => typeof v === "string" && v.length > limits.identifier)) {
      throw new ShipkeyError(
        "FIELD_TOO_LONG",
        `${name.slice(0, 64)} must be at most ${limits.identifier} characters`,
        { field: name.slice(0, 64) },
      );
    }
  }
}

/**
 * Public routes: a NUL in a path parameter or the query (PostgreSQL cannot compare it) is a 400
 * before any query runs. `licenseKeyParam` names a query parameter that carries a license key:
 * one with a NUL cannot exist, so it is refused as an unknown key, and spends the unknown-key
 * budget like any other guess.
 */
export function rejectNulInUrl(
  request: { query: unknown; params: unknown },
  licenseKeyParam?: string,
): void {
  // The name of the first parameter whose name or value holds a NUL.
  const withNul = (part: unknown) =>
    typeof part === "object" && part !== null
      ? Object.entries(part).find(
          ([key, value]) => key.includes("\u0000") || nulAt(value, 1) !== undefined,
        )?.[0]
      : undefined;
  const inQuery = withNul(request.query);
  if (licenseKeyParam !== undefined && inQuery === licenseKeyParam) {
    throw new ShipkeyError("UPDATES_LICENSE_NOT_FOUND", "Invalid license key");
  }
  const name = withNul(request.params) ?? inQuery;
  if (name !== undefined) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${name} must not contain NUL characters`, {
      field: name,
    });
  }
}
