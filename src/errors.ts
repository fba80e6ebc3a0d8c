/**
 * The one error type of the service. Every failure a client can see is a ShipkeyError with a
 * stable machine-readable code; the HTTP status comes from the exhaustive map below, so adding a
 * code without deciding its status does not compile.
 */
export type ErrorCode =
  // Request shape (any endpoint)
  | "INVALID_JSON"
  | "BODY_NOT_OBJECT"
  | "UNSUPPORTED_MEDIA_TYPE"
  | "PAYLOAD_TOO_LARGE"
  | "MISSING_REQUIRED_FIELDS"
  | "INVALID_FIELD_TYPE"
  | "FIELD_TOO_LONG"
  | "INVALID_FIELD_VALUE"
  | "UNKNOWN_FIELD"
  | "INVALID_NONCE"
  | "ROUTE_NOT_FOUND"
  | "BAD_REQUEST"
  | "HEADERS_TOO_LARGE"
  | "REQUEST_TIMEOUT"
  // Administration (CLI and admin API)
  | "PRODUCT_SLUG_TAKEN"
  | "PRODUCT_IN_USE"
  | "LICENSE_IN_USE"
  | "RELEASE_NOT_FOUND"
  | "NO_ROLLOUT"
  | "LICENSE_KEY_TAKEN"
  | "API_KEY_NOT_FOUND"
  | "CSRF_TOKEN_INVALID"
  | "SCOPE_NOT_HELD"
  | "PRODUCT_NOT_IN_KEY"
  | "EXTERNAL_ID_TAKEN"
  | "ADMIN_NOT_FOUND"
  | "LAST_ADMIN"
  | "IDEMPOTENCY_KEY_REUSED"
  | "IDEMPOTENCY_KEY_IN_USE"
  | "IDEMPOTENCY_REPLAY_WITHHELD"
  | "RATE_LIMITED"
  | "UPDATES_LICENSE_REQUIRED"
  | "UPDATES_LICENSE_NOT_FOUND"
  | "UPDATES_LICENSE_REFUSED"
  | "SIGNING_KEY_NOT_FOUND"
  | "SIGNING_KEY_CURRENT"
  | "KEY_ROTATION_CONFLICT"
  | "SIGNING_KEY_NEXT_EXISTS"
  | "NO_NEXT_SIGNING_KEY"
  | "SIGNING_KEY_TOO_NEW"
  | "WEBHOOK_ENDPOINT_NOT_FOUND"
  | "WEBHOOK_DELIVERY_NOT_FOUND"
  | "REDELIVERY_SCOPE_NOT_HELD"
  // Plans
  | "PLAN_NOT_FOUND"
  | "PLAN_SLUG_TAKEN"
  | "PLAN_IN_USE"
  | "PLAN_ARCHIVED"
  | "EMAIL_NOT_FOUND"
  | "EMAIL_TEMPLATE_INVALID"
  // Payment integrations
  | "INTEGRATION_NOT_FOUND"
  | "INTEGRATION_SECRET_NOT_FOUND"
  | "INTEGRATION_SECRETS_FULL"
  | "INTEGRATION_LAST_SECRET"
  | "INTEGRATION_EVENT_NOT_FOUND"
  | "INTEGRATION_EVENT_NOT_REPLAYABLE"
  | "INTEGRATION_PRICE_NOT_FOUND"
  | "WEBHOOK_SIGNATURE_MISSING"
  | "WEBHOOK_SIGNATURE_INVALID"
  | "WEBHOOK_TIMESTAMP_STALE"
  // Publish
  | "INVALID_API_KEY"
  | "MISSING_SCOPE"
  | "INVALID_CHANNEL"
  | "INVALID_RELEASE_ENTRY"
  | "INVALID_PLATFORM_ARCH"
  | "INVALID_DOWNLOAD_URL"
  | "INVALID_VERSION"
  | "TOO_MANY_RELEASES"
  | "DUPLICATE_RELEASE_ENTRY"
  | "TAURI_SIGNATURE_INVALID"
  | "PRODUCT_NOT_FOUND"
  // License endpoints
  | "LICENSE_NOT_FOUND"
  | "LICENSE_NOT_ACTIVE"
  | "LICENSE_EXPIRED"
  | "LICENSE_PRODUCT_MISMATCH"
  | "MAX_MACHINES_REACHED"
  | "MACHINE_NOT_ACTIVATED"
  | "ACTIVATION_NOT_FOUND"
  | "OFFLINE_LIMIT_REACHED"
  | "DEACTIVATION_LIMIT_REACHED"
  | "OFFLINE_PLACE_NOT_FOUND"
  // Faults
  | "DATABASE_UNAVAILABLE"
  | "INTERNAL_ERROR";

export const httpStatusByCode: Record<ErrorCode, number> = {
  INVALID_JSON: 400,
  BODY_NOT_OBJECT: 400,
  UNSUPPORTED_MEDIA_TYPE: 415,
  PAYLOAD_TOO_LARGE: 413,
  MISSING_REQUIRED_FIELDS: 400,
  INVALID_FIELD_TYPE: 400,
  FIELD_TOO_LONG: 400,
  INVALID_FIELD_VALUE: 400,
  UNKNOWN_FIELD: 400,
  INVALID_NONCE: 400,
  ROUTE_NOT_FOUND: 404,
  BAD_REQUEST: 400,
  HEADERS_TOO_LARGE: 431,
  REQUEST_TIMEOUT: 408,
  PRODUCT_SLUG_TAKEN: 409,
  PRODUCT_IN_USE: 409,
  LICENSE_IN_USE: 409,
  RELEASE_NOT_FOUND: 404,
  NO_ROLLOUT: 409,
  LICENSE_KEY_TAKEN: 409,
  API_KEY_NOT_FOUND: 404,
  CSRF_TOKEN_INVALID: 403,
  SCOPE_NOT_HELD: 403,
  PRODUCT_NOT_IN_KEY: 403,
  EXTERNAL_ID_TAKEN: 409,
  ADMIN_NOT_FOUND: 404,
  LAST_ADMIN: 409,
  IDEMPOTENCY_KEY_REUSED: 422,
  IDEMPOTENCY_KEY_IN_USE: 409,
  IDEMPOTENCY_REPLAY_WITHHELD: 409,
  UPDATES_LICENSE_REQUIRED: 401,
  UPDATES_LICENSE_NOT_FOUND: 403,
  UPDATES_LICENSE_REFUSED: 403,
  RATE_LIMITED: 429,
  SIGNING_KEY_NOT_FOUND: 404,
  SIGNING_KEY_CURRENT: 409,
  SIGNING_KEY_NEXT_EXISTS: 409,
  NO_NEXT_SIGNING_KEY: 409,
  SIGNING_KEY_TOO_NEW: 409,
  KEY_ROTATION_CONFLICT: 409,
  WEBHOOK_ENDPOINT_NOT_FOUND: 404,
  WEBHOOK_DELIVERY_NOT_FOUND: 404,
  REDELIVERY_SCOPE_NOT_HELD: 403,
  PLAN_NOT_FOUND: 404,
  PLAN_SLUG_TAKEN: 409,
  PLAN_IN_USE: 409,
  PLAN_ARCHIVED: 409,
  EMAIL_NOT_FOUND: 404,
  EMAIL_TEMPLATE_INVALID: 400,
  INTEGRATION_NOT_FOUND: 404,
  INTEGRATION_SECRET_NOT_FOUND: 404,
  INTEGRATION_SECRETS_FULL: 409,
  INTEGRATION_LAST_SECRET: 409,
  INTEGRATION_EVENT_NOT_FOUND: 404,
  INTEGRATION_EVENT_NOT_REPLAYABLE: 409,
  INTEGRATION_PRICE_NOT_FOUND: 404,
  WEBHOOK_SIGNATURE_MISSING: 400,
  WEBHOOK_SIGNATURE_INVALID: 400,
  WEBHOOK_TIMESTAMP_STALE: 400,
  INVALID_API_KEY: 401,
  MISSING_SCOPE: 403,
  INVALID_CHANNEL: 400,
  INVALID_RELEASE_ENTRY: 400,
  INVALID_PLATFORM_ARCH: 400,
  INVALID_DOWNLOAD_URL: 400,
  INVALID_VERSION: 409,
  TOO_MANY_RELEASES: 400,
  DUPLICATE_RELEASE_ENTRY: 400,
  TAURI_SIGNATURE_INVALID: 400,
  PRODUCT_NOT_FOUND: 404,
  LICENSE_NOT_FOUND: 404,
  LICENSE_NOT_ACTIVE: 403,
  LICENSE_EXPIRED: 403,
  LICENSE_PRODUCT_MISMATCH: 403,
  MAX_MACHINES_REACHED: 403,
  MACHINE_NOT_ACTIVATED: 403,
  ACTIVATION_NOT_FOUND: 404,
  OFFLINE_LIMIT_REACHED: 403,
  DEACTIVATION_LIMIT_REACHED: 403,
  OFFLINE_PLACE_NOT_FOUND: 404,
  DATABASE_UNAVAILABLE: 503,
  INTERNAL_ERROR: 500,
};

/**
 * The fixed messages: the spec's exact ones, and those of the two license-endpoint refusals
 * beyond the spec, whose message never varies either.
 */
export const specMessages = {
  MISSING_REQUIRED_FIELDS: "Missing required fields",
  INVALID_API_KEY: "Invalid or missing API key",
  MISSING_SCOPE: "Missing required scope",
  INVALID_CHANNEL: "Invalid channel",
  INVALID_RELEASE_ENTRY: "Invalid release entry",
  INVALID_PLATFORM_ARCH: "Invalid platform/arch",
  INVALID_DOWNLOAD_URL: "Invalid download URL",
  INVALID_VERSION: "Invalid version format",
  PRODUCT_NOT_FOUND: "Product not found",
  LICENSE_NOT_FOUND: "Invalid license key",
  LICENSE_NOT_ACTIVE: "License is suspended/revoked",
  LICENSE_EXPIRED: "License has expired",
  LICENSE_PRODUCT_MISMATCH: "License is not valid for this product",
  MAX_MACHINES_REACHED: "Maximum machines reached",
  MACHINE_NOT_ACTIVATED: "Machine not activated",
  ACTIVATION_NOT_FOUND: "Machine is not activated",
  // Beyond the spec: the offline allowance and the churn limit (docs/reference/license-endpoints.md).
  OFFLINE_LIMIT_REACHED: "Offline limit reached",
  DEACTIVATION_LIMIT_REACHED: "Deactivation limit reached",
} as const satisfies Partial<Record<ErrorCode, string>>;

type SpecCode = keyof typeof specMessages;

/**
 * Extra fields a failure body may carry beyond error/code: `field`, the one request field at
 * fault, as a path (`machineName`, `features[2]`, `releases[0].downloadUrl`); `fields`, every
 * missing field of MISSING_REQUIRED_FIELDS in the order the check lists them; validate's
 * `canActivate`.
 */
export type ErrorDetails = { field?: string; fields?: string[]; canActivate?: boolean };

export class ShipkeyError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails;
  /**
   * The status of its code. Not enumerable, like a getter, but writable: Fastify writes it on
   * the errors a route's validator returns (http/request-reader.ts), with the same value.
   */
  declare readonly statusCode: number;

  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}) {
    super(message);
    this.name = "ShipkeyError";
    this.code = code;
    this.details = details;
    Object.defineProperty(this, "statusCode", { value: httpStatusByCode[code], writable: true });
  }

  /** An error whose message is fixed (specMessages). */
  static spec(code: SpecCode, details: ErrorDetails = {}): ShipkeyError {
    return new ShipkeyError(code, specMessages[code], details);
  }
}

/**
 * Every ShipkeyError a series of checks throws, in order, each check running whatever the others
 * did: a dashboard form shows them all at once, each beside its field, while the API, through
 * `throwFirst`, keeps answering with the first. Anything else a check throws is rethrown.
 */
export function errorsOf(checks: ReadonlyArray<() => unknown>): ShipkeyError[] {
  const errors: ShipkeyError[] = [];
  for (const check of checks) {
    try {
      check();
    } catch (err) {
      if (!(err instanceof ShipkeyError)) throw err;
      errors.push(err);
    }
  }
  return errors;
}

/** Throws the first of the errors, if there is one. */
export function throwFirst(errors: readonly ShipkeyError[]): void {
  const [first] = errors;
  if (first) throw first;
}
