import { type Static, Type } from "typebox";
import {
  contract,
  DateTime,
  NullableDateTime,
  NullableString,
  StringEnum,
  withInput,
} from "./kit.js";
import { limits, signingKeyStatuses } from "./vocabulary.js";

/**
 * The spec's license endpoints, checkout and the public keys. Their requests are read by the
 * request reader (src/http/request-reader.ts) with the spec's input rules and in its order;
 * unknown fields are accepted (apps in the field send newer ones). Answers are serialized with
 * the answer schemas.
 */
const licenseRequest = {
  licenseKey: Type.String({ maxLength: limits.identifier }),
  machineId: Type.String({ maxLength: limits.identifier }),
  productSlug: Type.String({ maxLength: limits.identifier }),
};

/**
 * The app's version, which the SDK reports (docs/reference/license-endpoints.md). Never refused:
 * a value that is not a string, longer than the limit or not semver is ignored.
 */
const appVersion = Type.Optional(
  withInput(
    NullableString({
      maxLength: limits.appVersion,
      description:
        "The app's version (semver, a leading v stripped), stored on the machine's activation. " +
        "Never refused: a value that is not semver or longer than the limit is ignored.",
    }),
    { lenient: true },
  ),
);

/** What activate, validate and checkout refuse alike: the product, then the license's state. */
const licenseUseErrors = [
  "PRODUCT_NOT_FOUND",
  "LICENSE_NOT_FOUND",
  "LICENSE_NOT_ACTIVE",
  "LICENSE_EXPIRED",
  "LICENSE_PRODUCT_MISMATCH",
] as const;

export const Activation = Type.Object({
  machineId: Type.String(),
  machineName: NullableString(),
  activatedAt: DateTime(),
});
export type Activation = Static<typeof Activation>;

export const ActivateRequest = Type.Object({
  ...licenseRequest,
  machineName: Type.Optional(NullableString({ maxLength: limits.machineName })),
  platform: Type.Optional(NullableString({ maxLength: limits.platform })),
  appVersion,
});
export type ActivateRequest = Static<typeof ActivateRequest>;

export const ActivateAnswer = Type.Object(
  {
    success: Type.Literal(true),
    message: StringEnum(["Machine activated", "Machine already activated"]),
    activation: Activation,
    activeMachines: Type.Optional(Type.Integer({ description: "When this call activated" })),
    maxMachines: Type.Optional(Type.Integer({ description: "When this call activated" })),
  },
  { title: "ActivateAnswer" },
);
export type ActivateAnswer = Static<typeof ActivateAnswer>;

export const activate = contract({
  method: "POST",
  url: "/api/license/activate",
  operationId: "activateMachine",
  tag: "Licenses",
  summary: "Activate a machine on a license",
  auth: "public",
  errors: [...licenseUseErrors, "MAX_MACHINES_REACHED"],
  schema: {
    body: ActivateRequest,
    response: { 200: ActivateAnswer },
  },
  failureFlag: "success",
  signedAnswers: true,
});

export const ValidateRequest = Type.Object({ ...licenseRequest, appVersion });
export type ValidateRequest = Static<typeof ValidateRequest>;

export const ValidateAnswer = Type.Object(
  {
    valid: Type.Literal(true),
    edition: NullableString(),
    editionName: NullableString(),
    features: Type.Array(Type.String()),
    expiresAt: NullableDateTime("The license's expiry; null: never"),
    maxMachines: Type.Integer(),
    activeMachines: Type.Integer(),
  },
  { title: "ValidateAnswer" },
);
export type ValidateAnswer = Static<typeof ValidateAnswer>;

export const validate = contract({
  method: "POST",
  url: "/api/license/validate",
  operationId: "validateLicense",
  tag: "Licenses",
  summary: "Check a license and a machine's activation",
  auth: "public",
  errors: [...licenseUseErrors, "MACHINE_NOT_ACTIVATED"],
  schema: {
    body: ValidateRequest,
    response: { 200: ValidateAnswer },
  },
  failureFlag: "valid",
  signedAnswers: true,
});

export const DeactivateRequest = Type.Object({
  licenseKey: licenseRequest.licenseKey,
  machineId: licenseRequest.machineId,
  productSlug: Type.Optional(
    withInput(
      Type.String({ description: "Signs the answer when the request carries a Shipkey-Nonce" }),
      { lenient: true },
    ),
  ),
});
export type DeactivateRequest = Static<typeof DeactivateRequest>;

export const DeactivateAnswer = Type.Object(
  { success: Type.Literal(true), message: Type.String(), machineId: Type.String() },
  { title: "DeactivateAnswer" },
);
export type DeactivateAnswer = Static<typeof DeactivateAnswer>;

export const deactivate = contract({
  method: "POST",
  url: "/api/license/deactivate",
  operationId: "deactivateMachine",
  tag: "Licenses",
  summary: "Deactivate a machine, freeing its slot",
  description:
    "Where the license or its product sets a churn limit (maxDeactivationsPer30Days; none by " +
    "default), a deactivation beyond it in the trailing 30 days is refused with 403 " +
    "DEACTIVATION_LIMIT_REACHED, after the checks for the license key and the activation.",
  auth: "public",
  errors: ["LICENSE_NOT_FOUND", "ACTIVATION_NOT_FOUND", "DEACTIVATION_LIMIT_REACHED"],
  schema: {
    body: DeactivateRequest,
    response: { 200: DeactivateAnswer },
  },
  failureFlag: "success",
  signedAnswers: true,
});

export const CheckoutRequest = Type.Object({
  ...licenseRequest,
  ttlSeconds: Type.Optional(
    withInput(
      Type.Integer({
        minimum: 1,
        description: "Shortens the product's offline period; a larger value is capped to it",
      }),
      { unit: "seconds" },
    ),
  ),
  appVersion,
});
export type CheckoutRequest = Static<typeof CheckoutRequest>;

export const CheckoutAnswer = Type.Object(
  {
    success: Type.Literal(true),
    certificate: Type.String({ description: "Compact JWS" }),
    expiresAt: DateTime("The certificate's exp"),
  },
  { title: "CheckoutAnswer" },
);
export type CheckoutAnswer = Static<typeof CheckoutAnswer>;

export const checkout = contract({
  method: "POST",
  url: "/api/license/checkout",
  operationId: "checkoutLicense",
  tag: "Licenses",
  summary: "Check out a license certificate for offline use",
  description:
    "Applies validate's checks in the same order and with the same errors, and refreshes " +
    "last-seen as validate does. Then the offline limit: when the license's other machines " +
    "holding an unexpired certificate (deactivated ones included, until their certificate's exp) " +
    "already number maxMachines plus the product's offline allowance, 403 OFFLINE_LIMIT_REACHED. " +
    "The certificate is a compact JWS (EdDSA, typ shipkey-license+jwt) signed with the product's " +
    "current key (GET /api/products/{productSlug}/keys); docs/client.md describes its claims.",
  auth: "public",
  errors: [...licenseUseErrors, "MACHINE_NOT_ACTIVATED", "OFFLINE_LIMIT_REACHED"],
  schema: {
    body: CheckoutRequest,
    response: { 200: CheckoutAnswer },
  },
  failureFlag: "success",
  signedAnswers: true,
});

export const Jwk = Type.Object({
  kty: Type.Literal("OKP"),
  crv: Type.Literal("Ed25519"),
  x: Type.String({ description: "The raw 32-byte public key, base64url" }),
  kid: Type.String({ description: "The key's JWK thumbprint (RFC 7638)" }),
  alg: Type.Literal("EdDSA"),
  use: Type.Literal("sig"),
});
export type Jwk = Static<typeof Jwk>;

/** A JWKS member as published: the JWK, its status and its endorsement (docs/client.md). */
export const PublishedJwk = Type.Object({
  ...Jwk.properties,
  status: StringEnum(signingKeyStatuses, {
    description: "current signs; next is published ahead of its promotion; retired no longer signs",
  }),
  endorsement: Type.Optional(
    Type.String({
      description:
        "Compact JWS (typ shipkey-key-endorsement+jwt) by the key that was current when this " +
        "one was prepared, naming this key",
    }),
  ),
});
export type PublishedJwk = Static<typeof PublishedJwk>;

export const Jwks = Type.Object({ keys: Type.Array(PublishedJwk) }, { title: "Jwks" });
export type Jwks = Static<typeof Jwks>;

export const ProductParams = Type.Object({
  productSlug: Type.String({ minLength: 1, maxLength: limits.identifier }),
});

export const productKeys = contract({
  method: "GET",
  url: "/api/products/:productSlug/keys",
  operationId: "getProductKeys",
  tag: "Signing keys",
  summary: "The product's public signing keys (JWKS): current, then next, then retired",
  description:
    "Public. Verifies the Shipkey-Signature header of license answers and license certificates. " +
    "Revalidated on every use (Cache-Control: no-cache).",
  auth: "public",
  errors: ["PRODUCT_NOT_FOUND"],
  schema: { params: ProductParams, response: { 200: Jwks } },
});

export const liveness = contract({
  method: "GET",
  url: "/healthz",
  operationId: "getLiveness",
  tag: "Health",
  summary: "Liveness: the process answers (no database access)",
  auth: "public",
  schema: { response: { 200: Type.Object({ status: Type.Literal("ok") }) } },
});

export const readiness = contract({
  method: "GET",
  url: "/readyz",
  operationId: "getReadiness",
  tag: "Health",
  summary: "Readiness: the database takes a write",
  description: "503 DATABASE_UNAVAILABLE while it does not, or failed a request in the last 5 s.",
  auth: "public",
  schema: { response: { 200: Type.Object({ status: Type.Literal("ready") }) } },
});
