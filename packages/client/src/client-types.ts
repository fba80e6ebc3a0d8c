import type {
  Activation,
  CheckoutAnswer,
  DeactivateAnswer,
  LatestAnswer,
  ValidateAnswer,
} from "./contract.js";
import type { CertificateClaims } from "./certificate.js";
import type { FetchFunction, RetryOptions } from "./http.js";
import type { PublicKeys } from "./keys.js";
import type { ShipkeyStorage } from "./storage.js";

export interface ShipkeyClientOptions {
  /** The Shipkey server, e.g. `https://licenses.example.com` (https, except on loopback). */
  server: string | URL;
  productSlug: string;
  /**
   * The product's public keys, pinned in the app: its JWKS (`{keys: [...]}`), an array of JWKs,
   * one JWK, a PEM (SPKI) public key, or any of these as a JSON string. Checked at once: the
   * constructor throws a TypeError for anything that is not a set of Ed25519 public keys.
   */
  publicKeys?: PublicKeys;
  /**
   * Instead of publicKeys: fetch the JWKS from here once and keep it in storage (trust on first
   * use; it cannot protect against the machine's owner, who can edit the storage).
   */
  jwksUrl?: string | URL;
  storage: ShipkeyStorage;
  fetch?: FetchFunction;
  /** The time used for certificate expiry (tests inject one). */
  clock?: () => Date;
  /** This machine's id; by default the hashed OS machine id (machineId()). */
  machineId?: string | (() => Promise<string>);
  retry?: Partial<RetryOptions>;
  /**
   * When validate hears "Machine not activated" with a free slot (canActivate: an admin reset
   * the machines, or its lease lapsed while the app was not used), activate this machine again
   * and validate once more instead of throwing. Off by default: the app decides whether a freed
   * seat may be taken back without asking the user.
   */
  reactivate?: boolean;
  /**
   * The app's version (semver, e.g. `app.getVersion()`), sent with activate, validate and
   * checkout so that the dashboard counts machines per version. Checked at once: the constructor
   * throws a TypeError for a value that is not semver or is longer than 128 characters.
   */
  appVersion?: string;
  /**
   * activate, validate and checkout throw TAMPERED_RUNTIME when the process shows signs that
   * other code may run in it and replace these checks (detectTamperedRuntime: NODE_OPTIONS or
   * Node's options with --require, --import, --loader or --inspect, ELECTRON_RUN_AS_NODE, an open
   * inspector). Off by default. A speed bump, not a guarantee: code that runs first can hide the
   * signs; Electron's fuses close these routes (docs/client.md, "Injected code").
   */
  refuseTamperedRuntime?: boolean;
}

export type { Activation };

export interface ActivateResult {
  /** true when this call activated the machine; false when it already was. */
  activated: boolean;
  message: string;
  activation: Activation;
  /** Present when the call activated the machine. */
  activeMachines?: number;
  maxMachines?: number;
}

/** The server's validate answer (its `expiresAt` is the license's expiry, null: never). */
export type OnlineValidation = ValidateAnswer & { offline: false };

export interface OfflineValidation {
  valid: true;
  offline: true;
  /** End of the offline period (the certificate's exp): validate must reach the server by then. */
  expiresAt: string;
  licenseExpiresAt: string | null;
  edition: string | null;
  editionName: string | null;
  features: string[];
  maxMachines: number;
}

export type ValidateResult = OnlineValidation | OfflineValidation;

export type DeactivateResult = Pick<DeactivateAnswer, "message" | "machineId">;

/** The certificate (the compact JWS, as stored), its expiry and its verified claims. */
export type CheckoutResult = Omit<CheckoutAnswer, "success"> & { claims: CertificateClaims };

export type UpdatePlatform = "WINDOWS" | "MACOS" | "LINUX";
export type UpdateArch = "X64" | "ARM64";

export interface CheckForUpdateOptions {
  /** WINDOWS, MACOS, LINUX or Node's win32/darwin/linux; default: this process's. */
  platform?: UpdatePlatform | NodeJS.Platform;
  /** X64, ARM64 or Node's x64/arm64; default: this process's. */
  arch?: UpdateArch | NodeJS.Architecture;
  /** The running version (semver); only newer releases are offered. */
  currentVersion: string;
  /** stable (default), beta or alpha: beta also sees stable releases, alpha sees all. */
  channel?: "stable" | "beta" | "alpha" | "STABLE" | "BETA" | "ALPHA";
}

/** The generic feed's answer. */
export type UpdateInfo = LatestAnswer;

export interface StoredLicense {
  licenseKey: string;
  machineId: string;
  /** End of the stored certificate's offline period, if one is stored. */
  certificateExpiresAt?: string;
}
