import { ShipkeyError } from "./errors.js";
import type { Answer } from "./http.js";

/** A server answer's fields by the contract's names, each still to be checked. */
export type Unchecked<T> = { [K in keyof T]?: unknown };

/** Why an answer's signature is refused, by checkSignature's verdict. */
export const signatureMessages = {
  valid: "",
  missing: "The server's answer is not signed",
  "unknown-key": "The server's answer is signed by a key this app does not trust",
  invalid: "The server's answer does not match its signature",
} as const;

/** Refusals after which a stored certificate must not keep the app running offline. */
const revokingCodes = new Set([
  "LICENSE_NOT_FOUND",
  "LICENSE_NOT_ACTIVE",
  "LICENSE_EXPIRED",
  "LICENSE_PRODUCT_MISMATCH",
  "MACHINE_NOT_ACTIVATED",
  "MAX_MACHINES_REACHED",
]);

/** A signed refusal that ends offline use: the stored certificate is dropped. */
export function isRevoking(error: unknown): boolean {
  return error instanceof ShipkeyError && error.signed === true && revokingCodes.has(error.code);
}

/** An answer whose signature does not verify: it counts as no answer at all. */
export function isUnverified(error: unknown): boolean {
  return error instanceof ShipkeyError && error.code === "SIGNATURE_INVALID";
}

/** No answer, a 5xx or a 429: the server cannot serve now, which offline grace covers. */
export function isUnreachable(error: unknown): boolean {
  if (!(error instanceof ShipkeyError)) return false;
  if (error.code === "NETWORK_ERROR") return true;
  return error.status !== undefined && (error.status >= 500 || error.status === 429);
}

/** A signed "Machine not activated" with a free slot: the machine may activate again. */
export function isFreedSeat(error: unknown): boolean {
  return (
    error instanceof ShipkeyError &&
    error.signed === true &&
    error.code === "MACHINE_NOT_ACTIVATED" &&
    error.canActivate === true
  );
}

/** A refusal as the server gave it: its code and message, else the status. */
export function failure(answer: Answer, json: unknown, signed: boolean): ShipkeyError {
  const body = isObject(json) ? json : {};
  const code = typeof body.code === "string" ? body.code : `HTTP_${answer.status}`;
  const message =
    typeof body.error === "string" ? body.error : `The server answered ${answer.status}`;
  return new ShipkeyError(code, message, {
    status: answer.status,
    signed,
    ...(typeof body.canActivate === "boolean" ? { canActivate: body.canActivate } : {}),
  });
}

export function invalidResponse(what: string): ShipkeyError {
  return new ShipkeyError("INVALID_RESPONSE", `Unexpected answer from ${what}`);
}

export function parseJson<T>(value: Uint8Array | string | undefined): T | undefined {
  if (value === undefined) return undefined;
  try {
    return JSON.parse(typeof value === "string" ? value : new TextDecoder().decode(value)) as T;
  } catch {
    return undefined;
  }
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

export function stringOrNull(value: unknown): string | null {
  return typeof value === "string" ? value : null;
}

export function stringArray(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

export function isoSeconds(seconds: number): string {
  return new Date(seconds * 1000).toISOString();
}

/** The Date of a verified answer, in ms. */
export function answerTime(answer: Answer): number | undefined {
  const date = Date.parse(answer.headers.get("date") ?? "");
  return Number.isNaN(date) ? undefined : date;
}
