import type { IncomingMessage } from "node:http";
import { ShipkeyError } from "../errors.js";
import { limits } from "../contracts/vocabulary.js";

/**
 * What every request of a group passes before its contract is read (the scopes' preValidation
 * hooks, routes.ts): no NUL character in the URL or, on the admin API, anywhere; no query value
 * longer than any value the feeds read; a header given once. And the one notation of a field's
 * path in failure bodies.
 */

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
 * parameters or body (PostgreSQL cannot store or compare it). The public routes' bodies are
 * checked field by field by the request reader instead, to keep the spec's check order.
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
