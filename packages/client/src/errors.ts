import type { ServerErrorCode } from "./contract.js";

/** Codes the server gives on the license endpoints and the update feed: from its contracts. */
export type { ServerErrorCode };

/** Codes the SDK raises itself. */
export type SdkErrorCode =
  /**
   * An answer (or a stored certificate) is unsigned, signed by a key this app does not trust, or
   * does not match its signature (changed, replayed, or answering another request).
   */
  | "SIGNATURE_INVALID"
  /** Offline, and the stored certificate's `exp` has passed (or there is none). */
  | "OFFLINE_PERIOD_EXPIRED"
  /** The server could not be reached (after the retries), or kept answering 503. */
  | "NETWORK_ERROR"
  /** validate/deactivate/checkout before any activate (nothing stored). */
  | "NOT_ACTIVATED"
  /** A signed answer whose body is not the JSON the spec defines. */
  | "INVALID_RESPONSE"
  /**
   * No OS machine id could be read: from machineId(), and from every call on macOS and Windows,
   * where the OS always has one (elsewhere the client falls back to an id kept in its storage).
   */
  | "MACHINE_ID_UNAVAILABLE"
  /** Offline, and the clock is more than a day before a time already seen: it was set back. */
  | "CLOCK_SET_BACK"
  /** The stored license was written on another machine (copied storage); activate here. */
  | "STATE_FROM_ANOTHER_MACHINE"
  /** checkForUpdate: the feed offered a download URL that is not https (http only on loopback). */
  | "UNSAFE_UPDATE_URL"
  /**
   * With refuseTamperedRuntime: activate, validate or checkout saw signs that other code may run
   * in the process (a preload or a debugger through NODE_OPTIONS or Node's options,
   * ELECTRON_RUN_AS_NODE, an open inspector); the message names them.
   */
  | "TAMPERED_RUNTIME";

/** `string & {}` keeps autocompletion of the known codes while accepting a newer server's. */
export type ShipkeyErrorCode = ServerErrorCode | SdkErrorCode | (string & {});

export interface ShipkeyErrorOptions {
  /** HTTP status of the answer, when the error comes from one. */
  status?: number;
  /** Validate's MACHINE_NOT_ACTIVATED: whether a slot is free. */
  canActivate?: boolean;
  /** Whether the failure answer carried a valid signature (false: it may be forged). */
  signed?: boolean;
  cause?: unknown;
}

/**
 * Every failure of the SDK. `code` is the server's code for a refusal (LICENSE_EXPIRED, ...) or
 * one of the SDK's own (SIGNATURE_INVALID, OFFLINE_PERIOD_EXPIRED, NETWORK_ERROR, ...).
 */
export class ShipkeyError extends Error {
  readonly code: ShipkeyErrorCode;
  readonly status: number | undefined;
  readonly canActivate: boolean | undefined;
  readonly signed: boolean;

  constructor(code: ShipkeyErrorCode, message: string, options: ShipkeyErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ShipkeyError";
    this.code = code;
    this.status = options.status;
    this.canActivate = options.canActivate;
    this.signed = options.signed ?? false;
  }
}
