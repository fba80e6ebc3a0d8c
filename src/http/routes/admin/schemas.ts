/** JSON Schemas shared by the admin routes (validated by Fastify's Ajv; no type coercion). */
export const slugParam = {
  type: "object",
  required: ["slug"],
  properties: { slug: { type: "string", minLength: 1, maxLength: 255 } },
} as const;

export const licenseKeyParam = {
  type: "object",
  required: ["licenseKey"],
  properties: { licenseKey: { type: "string", minLength: 1, maxLength: 255 } },
} as const;

export const pageQuery = {
  limit: { type: "string", pattern: "^[1-9][0-9]{0,2}$" },
  cursor: { type: "string", maxLength: 200 },
} as const;

const nullableString = (maxLength: number) => ({ type: ["string", "null"], maxLength }) as const;

export const licenseSettingsProperties = {
  status: { type: "string", enum: ["ACTIVE", "SUSPENDED", "REVOKED"] },
  expiresAt: { type: ["string", "null"], maxLength: 64 },
  maxMachines: { type: "integer", minimum: 0, maximum: 2147483647 },
  edition: nullableString(255),
  editionName: nullableString(255),
  features: {
    type: "array",
    maxItems: 100,
    items: { type: "string", minLength: 1, maxLength: 255 },
  },
  customerName: nullableString(255),
  customerEmail: nullableString(255),
  note: nullableString(4096),
  externalId: nullableString(255),
  maxDeactivationsPer30Days: {
    type: ["integer", "null"],
    minimum: 0,
    maximum: 10000,
    description:
      "Public deactivations allowed in the trailing 30 days (403 DEACTIVATION_LIMIT_REACHED beyond); overrides the product's; null: the product's applies",
  },
} as const;

/** A product as the admin API answers it (GET, list, create, PATCH). */
export const productSchema = {
  type: "object",
  required: [
    "id",
    "slug",
    "name",
    "createdAt",
    "offlinePeriodSeconds",
    "offlineAllowance",
    "maxDeactivationsPer30Days",
    "updatesRequireLicense",
    "downloadRedirects",
    "tauriPublicKey",
    "tauriKeyId",
  ],
  properties: {
    id: { type: "string" },
    slug: { type: "string" },
    name: { type: "string" },
    createdAt: { type: "string", format: "date-time" },
    offlinePeriodSeconds: {
      type: "integer",
      description: "How long a license certificate lasts (POST /api/license/checkout)",
    },
    offlineAllowance: {
      type: "integer",
      description:
        "Machines beyond a license's maxMachines that may hold an unexpired certificate at once",
    },
    maxDeactivationsPer30Days: {
      type: ["integer", "null"],
      description:
        "Public deactivations allowed per license in the trailing 30 days; null: no limit",
    },
    updatesRequireLicense: {
      type: "boolean",
      description: "Feeds and downloads answer only machines activated on a usable license",
    },
    downloadRedirects: {
      type: "boolean",
      description: "Feeds hand out the counted /api/downloads redirect instead of the stored URL",
    },
    tauriPublicKey: {
      type: ["string", "null"],
      description:
        "The Tauri updater's minisign public key (tauri.conf.json plugins.updater.pubkey); " +
        "while set, publish refuses signatures not made by it",
    },
    tauriKeyId: {
      type: ["string", "null"],
      description: "The key's minisign key id, 16 hex digits, as tauri signer generate prints it",
    },
  },
} as const;
