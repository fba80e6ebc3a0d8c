// Generated from the server's contracts (src/contracts) by `npm run contracts`; do not edit.
// test/sdk/sdk-contract.test.ts fails when this file and the contracts disagree.

export type Activation = {
  machineId: string;
  machineName: string | null;
  activatedAt: string;
};

export type ActivateAnswer = {
  success: true;
  message: "Machine activated" | "Machine already activated";
  activation: Activation;
  /** When this call activated */
  activeMachines?: number;
  /** When this call activated */
  maxMachines?: number;
};

export type ValidateAnswer = {
  valid: true;
  edition: string | null;
  editionName: string | null;
  features: string[];
  /** The license's expiry; null: never */
  expiresAt: string | null;
  maxMachines: number;
  activeMachines: number;
};

export type DeactivateAnswer = {
  success: true;
  message: string;
  machineId: string;
};

export type CheckoutAnswer = {
  success: true;
  /** Compact JWS */
  certificate: string;
  /** The certificate's exp */
  expiresAt: string;
};

export type PublishedJwk = {
  kty: "OKP";
  crv: "Ed25519";
  /** The raw 32-byte public key, base64url */
  x: string;
  /** The key's JWK thumbprint (RFC 7638) */
  kid: string;
  alg: "EdDSA";
  use: "sig";
  /** current signs; next is published ahead of its promotion; retired no longer signs */
  status: "current" | "next" | "retired";
  /** Compact JWS (typ shipkey-key-endorsement+jwt) by the key that was current when this one was prepared, naming this key */
  endorsement?: string;
};

export type Jwks = {
  keys: PublishedJwk[];
};

export type LatestAnswer = {
  version: string;
  channel: "STABLE" | "BETA" | "ALPHA";
  /** Markdown, as published */
  notes: string | null;
  pubDate: string;
  url: string;
  signature: string | null;
  sha512: string | null;
  fileSize: number | null;
  /** A critical update: install it without waiting (the app decides how) */
  critical: boolean;
};

export type Failure = {
  /** Human-readable message (the spec's exact text where it has one) */
  error: string;
  /** Stable code (docs/reference/errors.md) */
  code: string;
  /** The one offending field, where there is one */
  field?: string;
  /** MISSING_REQUIRED_FIELDS: every missing field, in check order */
  fields?: string[];
};

export type SuccessFailure = {
  /** Human-readable message (the spec's exact text where it has one) */
  error: string;
  /** Stable code (docs/reference/errors.md) */
  code: string;
  success: false;
  /** With MACHINE_NOT_ACTIVATED: whether a slot is free */
  canActivate?: boolean;
  /** The one offending field, where there is one */
  field?: string;
  /** MISSING_REQUIRED_FIELDS: every missing field, in check order */
  fields?: string[];
};

export type ValidFailure = {
  /** Human-readable message (the spec's exact text where it has one) */
  error: string;
  /** Stable code (docs/reference/errors.md) */
  code: string;
  valid: false;
  /** With MACHINE_NOT_ACTIVATED: whether a slot is free */
  canActivate?: boolean;
  /** The one offending field, where there is one */
  field?: string;
  /** MISSING_REQUIRED_FIELDS: every missing field, in check order */
  fields?: string[];
};

/** Every code the server may answer the endpoints the SDK calls with (docs/reference/errors.md). */
export type ServerErrorCode =
  | "ACTIVATION_NOT_FOUND"
  | "BODY_NOT_OBJECT"
  | "DATABASE_UNAVAILABLE"
  | "DEACTIVATION_LIMIT_REACHED"
  | "FIELD_TOO_LONG"
  | "INTERNAL_ERROR"
  | "INVALID_CHANNEL"
  | "INVALID_FIELD_TYPE"
  | "INVALID_FIELD_VALUE"
  | "INVALID_JSON"
  | "INVALID_NONCE"
  | "INVALID_PLATFORM_ARCH"
  | "LICENSE_EXPIRED"
  | "LICENSE_NOT_ACTIVE"
  | "LICENSE_NOT_FOUND"
  | "LICENSE_PRODUCT_MISMATCH"
  | "MACHINE_NOT_ACTIVATED"
  | "MAX_MACHINES_REACHED"
  | "MISSING_REQUIRED_FIELDS"
  | "OFFLINE_LIMIT_REACHED"
  | "PAYLOAD_TOO_LARGE"
  | "PRODUCT_NOT_FOUND"
  | "RATE_LIMITED"
  | "RELEASE_NOT_FOUND"
  | "UNSUPPORTED_MEDIA_TYPE"
  | "UPDATES_LICENSE_NOT_FOUND"
  | "UPDATES_LICENSE_REFUSED"
  | "UPDATES_LICENSE_REQUIRED";
