/**
 * Request and response shapes of the spec's four endpoints, for the OpenAPI document. The
 * requests are validated by hand in the spec's binding check order (docs/reference/license-endpoints.md), which
 * JSON Schema validation cannot express, so these route schemas describe and do not validate
 * (`documentationOnly`). Responses are serialized with them, so every field a failure may carry
 * is listed.
 */
/** A failure body; with `flag`, the license endpoints' `success`/`valid: false` too. */
export const failure = (flag?: "success" | "valid") => ({
  type: "object",
  required: ["error", "code"],
  properties: {
    error: { type: "string" },
    code: { type: "string" },
    ...(flag ? { [flag]: { type: "boolean", const: false } } : {}),
    ...(flag === "valid" ? { canActivate: { type: "boolean" } } : {}),
  },
});

const str = { type: "string" } as const;
const nullableStr = { type: ["string", "null"] } as const;
const activation = {
  type: "object",
  properties: {
    machineId: str,
    machineName: nullableStr,
    activatedAt: { type: "string", format: "date-time" },
  },
} as const;

export const documentationOnly = () => () => true;

export const publishSchema = {
  summary: "Publish release entries for a product version (scope releases:write)",
  description:
    "A key limited to products is refused with 403 PRODUCT_NOT_IN_KEY for any other product, where the spec checks that the product exists (an unknown one stays 404). Each publish is audited (release.publish) in its transaction.",
  body: {
    type: "object",
    required: ["productSlug", "version", "channel", "releases"],
    properties: {
      productSlug: str,
      version: { type: "string", description: "Semver 2.0.0; one leading v is stripped" },
      channel: { type: "string", enum: ["STABLE", "BETA", "ALPHA"] },
      releaseNotes: { type: "string", description: "Markdown" },
      releases: {
        type: "array",
        minItems: 1,
        maxItems: 50,
        items: {
          type: "object",
          required: ["platform", "arch", "downloadUrl"],
          properties: {
            platform: { type: "string", enum: ["WINDOWS", "MACOS", "LINUX"] },
            arch: { type: "string", enum: ["X64", "ARM64"] },
            downloadUrl: { type: "string", format: "uri", maxLength: 2048 },
            signature: {
              type: "string",
              maxLength: 8192,
              description:
                "While the product has a Tauri public key: the .sig file's contents (base64 " +
                "minisign signature) by that key, else 400 TAURI_SIGNATURE_INVALID",
            },
            fileSize: { type: "integer", minimum: 0 },
            sha512: {
              type: "string",
              description: "Base64 of the artifact's SHA-512 digest (electron-builder's form)",
            },
          },
        },
      },
    },
  },
  response: {
    200: {
      type: "object",
      properties: {
        product: str,
        version: str,
        channel: str,
        releases: {
          type: "array",
          items: {
            type: "object",
            properties: {
              platform: str,
              arch: str,
              status: { type: "string", enum: ["created", "updated"] },
            },
          },
        },
      },
    },
    "4xx": failure(),
    "5xx": failure(),
  },
} as const;

const licenseRequest = (
  extra: Record<string, unknown> = {},
  required = ["licenseKey", "machineId", "productSlug"],
) => ({
  type: "object",
  required,
  properties: { licenseKey: str, machineId: str, productSlug: str, ...extra },
});

export const activateSchema = {
  summary: "Activate a machine on a license",
  body: licenseRequest({ machineName: str, platform: str }),
  response: {
    200: {
      type: "object",
      properties: {
        success: { type: "boolean" },
        message: { type: "string", enum: ["Machine activated", "Machine already activated"] },
        activation,
        activeMachines: { type: "integer" },
        maxMachines: { type: "integer" },
      },
    },
    "4xx": failure("success"),
    "5xx": failure("success"),
  },
} as const;

export const validateSchema = {
  summary: "Check a license and a machine's activation",
  body: licenseRequest(),
  response: {
    200: {
      type: "object",
      properties: {
        valid: { type: "boolean" },
        edition: nullableStr,
        editionName: nullableStr,
        features: { type: "array", items: str },
        expiresAt: { type: ["string", "null"], format: "date-time" },
        maxMachines: { type: "integer" },
        activeMachines: { type: "integer" },
      },
    },
    "4xx": failure("valid"),
    "5xx": failure("valid"),
  },
} as const;

export const deactivateSchema = {
  summary: "Deactivate a machine, freeing its slot",
  description:
    "Where the license or its product sets a churn limit (maxDeactivationsPer30Days; none by default), a deactivation beyond it in the trailing 30 days is refused with 403 DEACTIVATION_LIMIT_REACHED, after the checks for the license key and the activation.",
  body: licenseRequest({}, ["licenseKey", "machineId"]),
  response: {
    200: {
      type: "object",
      properties: { success: { type: "boolean" }, message: str, machineId: str },
    },
    "4xx": failure("success"),
    "5xx": failure("success"),
  },
} as const;

// Validate's errors (canActivate included) with the success flag of this endpoint's answers.
const checkoutFailure = {
  ...failure("success"),
  properties: { ...failure("success").properties, canActivate: { type: "boolean" } },
};

export const checkoutSchema = {
  summary: "Check out a license certificate for offline use",
  description:
    "Applies validate's checks in the same order and with the same errors, and refreshes last-seen as validate does. Then the offline limit: when the license's other machines holding an unexpired certificate (deactivated ones included, until their certificate's exp) already number maxMachines plus the product's offline allowance, 403 OFFLINE_LIMIT_REACHED. The certificate is a compact JWS (EdDSA, typ shipkey-license+jwt) signed with the product's current key (GET /api/products/{productSlug}/keys); docs/client.md describes its claims.",
  body: licenseRequest({
    ttlSeconds: {
      type: "integer",
      minimum: 1,
      description: "Shortens the product's offline period; a larger value is capped to it",
    },
  }),
  response: {
    200: {
      type: "object",
      properties: {
        success: { type: "boolean" },
        certificate: { type: "string", description: "Compact JWS" },
        expiresAt: { type: "string", format: "date-time", description: "The certificate's exp" },
      },
    },
    "4xx": checkoutFailure,
    "5xx": checkoutFailure,
  },
} as const;
