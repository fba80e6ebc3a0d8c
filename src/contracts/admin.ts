import { type Static, type TSchema, Type } from "typebox";
import {
  contract,
  DateTime,
  NullableDateTime,
  NullableInteger,
  NullableString,
  Page,
  PageQuery,
  StringEnum,
} from "./kit.js";
import { Jwk } from "./license-api.js";
import {
  apiKeyScopes,
  arches,
  channels,
  deactivationLimitRange,
  machineLeaseDaysRange,
  licenseStatuses,
  limits,
  offlineAllowanceRange,
  offlinePeriod,
  platforms,
  rolloutRange,
  rolloutStates,
  rolloutSteps,
  signingKeyStatuses,
  usageReportDays,
} from "./vocabulary.js";

/**
 * The admin API: an API key with the route's scope, or a signed-in admin (dashboard session,
 * with X-CSRF-Token on writes). Requests are validated by these schemas (Ajv, no coercion,
 * unknown fields refused).
 */
const Slug = Type.String({ minLength: 1, maxLength: limits.identifier });
const SlugParams = Type.Object({ slug: Slug });
export const LicenseKeyParams = Type.Object({
  licenseKey: Type.String({ minLength: 1, maxLength: limits.identifier }),
});
const strict = { additionalProperties: false } as const;
const Deleted = <P extends Record<string, TSchema>>(properties: P) =>
  Type.Object({ deleted: Type.Literal(true), ...properties });
const churnLimitDescription =
  "Public deactivations allowed per license in the trailing 30 days (403 " +
  "DEACTIVATION_LIMIT_REACHED beyond)";

const machineLeaseDescription =
  "Days a machine keeps its slot without being seen (activate, validate, checkout; an unexpired " +
  "certificate counts as seen until its exp); then the server deactivates it";

// Products

export const Product = Type.Object(
  {
    id: Type.String(),
    slug: Type.String(),
    name: Type.String(),
    createdAt: DateTime(),
    offlinePeriodSeconds: Type.Integer({
      description: "How long a license certificate lasts (POST /api/license/checkout)",
    }),
    offlineAllowance: Type.Integer({
      description:
        "Machines beyond a license's maxMachines that may hold an unexpired certificate at once",
    }),
    maxDeactivationsPer30Days: NullableInteger({
      description: `${churnLimitDescription}; null: no limit`,
    }),
    machineLeaseDays: NullableInteger({
      description: `${machineLeaseDescription}; null: machines keep their slots until deactivated`,
    }),
    updatesRequireLicense: Type.Boolean({
      description: "Feeds and downloads answer only machines activated on a usable license",
    }),
    downloadRedirects: Type.Boolean({
      description: "Feeds hand out the counted /api/downloads redirect instead of the stored URL",
    }),
    tauriPublicKey: NullableString({
      description:
        "The Tauri updater's minisign public key (tauri.conf.json plugins.updater.pubkey); " +
        "while set, publish refuses signatures not made by it",
    }),
    tauriKeyId: NullableString({
      description: "The key's minisign key id, 16 hex digits, as tauri signer generate prints it",
    }),
  },
  { title: "Product" },
);
export type Product = Static<typeof Product>;

export const ProductSettings = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: limits.name })),
    updatesRequireLicense: Type.Optional(Product.properties.updatesRequireLicense),
    downloadRedirects: Type.Optional(Product.properties.downloadRedirects),
    tauriPublicKey: Type.Optional(
      NullableString({
        maxLength: limits.tauriPublicKey,
        description:
          "tauri.conf.json's plugins.updater.pubkey (base64 of the minisign public key file); " +
          "null clears it",
      }),
    ),
    offlinePeriodSeconds: Type.Optional(
      Type.Integer({ minimum: offlinePeriod.minSeconds, maximum: offlinePeriod.maxSeconds }),
    ),
    offlineAllowance: Type.Optional(
      Type.Integer({
        minimum: offlineAllowanceRange.min,
        maximum: offlineAllowanceRange.max,
        description:
          "Machines beyond a license's maxMachines that may hold an unexpired certificate at " +
          "once (default 1); checkout beyond it is 403 OFFLINE_LIMIT_REACHED",
      }),
    ),
    maxDeactivationsPer30Days: Type.Optional(
      NullableInteger({
        minimum: deactivationLimitRange.min,
        maximum: deactivationLimitRange.max,
        description: `${churnLimitDescription}; null: no limit (the default). A license's own value overrides it`,
      }),
    ),
    machineLeaseDays: Type.Optional(
      NullableInteger({
        minimum: machineLeaseDaysRange.min,
        maximum: machineLeaseDaysRange.max,
        description: `${machineLeaseDescription}; null: off (the default)`,
      }),
    ),
  },
  {
    ...strict,
    minProperties: 1,
    description: "At least one setting; each given one is changed, all in one transaction",
  },
);
export type ProductSettings = Static<typeof ProductSettings>;

export const listProducts = contract({
  method: "GET",
  url: "/api/admin/products",
  operationId: "listProducts",
  tag: "Admin: products",
  summary: "List products",
  description: "A key limited to products lists only those.",
  auth: "products:read",
  schema: { response: { 200: Type.Object({ items: Type.Array(Product) }) } },
});

export const createProduct = contract({
  method: "POST",
  url: "/api/admin/products",
  operationId: "createProduct",
  tag: "Admin: products",
  summary: "Create a product",
  description:
    "Creates a product and its signing key. A key limited to products cannot (403 PRODUCT_NOT_IN_KEY).",
  auth: "products:write",
  errors: ["PRODUCT_SLUG_TAKEN", "PRODUCT_NOT_IN_KEY"],
  schema: {
    body: Type.Object(
      {
        slug: Type.String({ minLength: 1, maxLength: limits.identifier }),
        name: Type.String({ minLength: 1, maxLength: limits.name }),
      },
      strict,
    ),
    response: { 201: Product },
  },
});

export const getProduct = contract({
  method: "GET",
  url: "/api/admin/products/:slug",
  operationId: "getProduct",
  tag: "Admin: products",
  summary: "Get a product",
  auth: "products:read",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY"],
  schema: { params: SlugParams, response: { 200: Product } },
});

export const updateProduct = contract({
  method: "PATCH",
  url: "/api/admin/products/:slug",
  operationId: "updateProduct",
  tag: "Admin: products",
  summary: "Change a product's settings",
  description:
    "Changes the given settings: name, update delivery, Tauri public key, how long license " +
    "certificates last (60 s to 90 days), how many machines beyond maxMachines may hold one (the " +
    "offline allowance), and the churn limit on public deactivations.",
  auth: "products:write",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY"],
  schema: { params: SlugParams, body: ProductSettings, response: { 200: Product } },
});

export const deleteProduct = contract({
  method: "DELETE",
  url: "/api/admin/products/:slug",
  operationId: "deleteProduct",
  tag: "Admin: products",
  summary: "Delete a product without licenses or releases",
  auth: "products:write",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_IN_USE", "PRODUCT_NOT_IN_KEY"],
  schema: { params: SlugParams, response: { 200: Deleted({ slug: Type.String() }) } },
});

export const SigningKey = Type.Object(
  {
    kid: Type.String(),
    status: StringEnum(signingKeyStatuses),
    createdAt: DateTime(),
    retiredAt: NullableDateTime(),
    endorsement: NullableString({
      description:
        "Compact JWS by the key that was current when this one was prepared; null if none",
    }),
    jwk: Jwk,
    pem: Type.String({ description: "The public key as SPKI PEM" }),
  },
  { title: "SigningKey" },
);
export type SigningKey = Static<typeof SigningKey>;
const SigningKeys = Type.Array(SigningKey);

export const listSigningKeys = contract({
  method: "GET",
  url: "/api/admin/products/:slug/keys",
  operationId: "listSigningKeys",
  tag: "Admin: products",
  summary: "List a product's signing keys",
  description: "The product's signing keys (public halves only): current, next, then retired ones.",
  auth: "products:read",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY"],
  schema: { params: SlugParams, response: { 200: Type.Object({ items: SigningKeys }) } },
});

export const prepareSigningKey = contract({
  method: "POST",
  url: "/api/admin/products/:slug/keys/prepare",
  operationId: "prepareSigningKey",
  tag: "Admin: products",
  summary: "Prepare the next signing key (rotation, step one)",
  description:
    "A next signing key, endorsed by the current one, published in the JWKS and announced on " +
    "signed answers. It signs nothing until promoted.",
  auth: "products:write",
  errors: [
    "PRODUCT_NOT_FOUND",
    "PRODUCT_NOT_IN_KEY",
    "SIGNING_KEY_NEXT_EXISTS",
    "KEY_ROTATION_CONFLICT",
  ],
  schema: {
    params: SlugParams,
    response: {
      201: Type.Object({ kid: Type.String(), endorsedBy: Type.String(), keys: SigningKeys }),
    },
  },
});

export const promoteSigningKey = contract({
  method: "POST",
  url: "/api/admin/products/:slug/keys/promote",
  operationId: "promoteSigningKey",
  tag: "Admin: products",
  summary: "Promote the next signing key (rotation, step two)",
  description:
    "The next key becomes current (every server signs with it within 15 s) and the current one " +
    "is retired, still published. Refused (409 SIGNING_KEY_TOO_NEW) while the next key is " +
    "younger than the product's offline period, unless force is true.",
  auth: "products:write",
  errors: [
    "PRODUCT_NOT_FOUND",
    "PRODUCT_NOT_IN_KEY",
    "NO_NEXT_SIGNING_KEY",
    "SIGNING_KEY_TOO_NEW",
    "KEY_ROTATION_CONFLICT",
  ],
  schema: {
    params: SlugParams,
    body: Type.Unsafe<{ force?: boolean } | null>({
      type: ["object", "null"],
      additionalProperties: false,
      properties: { force: { type: "boolean" } },
    }),
    response: {
      200: Type.Object({
        kid: Type.String(),
        retiredKid: NullableString(),
        forced: Type.Boolean(),
        keys: SigningKeys,
      }),
    },
  },
});

export const removeSigningKey = contract({
  method: "DELETE",
  url: "/api/admin/products/:slug/keys/:kid",
  operationId: "removeSigningKey",
  tag: "Admin: products",
  summary: "Remove a next or retired signing key",
  description: "Removes it from the JWKS; the current key cannot be removed.",
  auth: "products:write",
  errors: [
    "PRODUCT_NOT_FOUND",
    "PRODUCT_NOT_IN_KEY",
    "SIGNING_KEY_NOT_FOUND",
    "SIGNING_KEY_CURRENT",
  ],
  schema: {
    params: Type.Object({ slug: Slug, kid: Type.String({ minLength: 1, maxLength: limits.id }) }),
    response: { 200: Deleted({ kid: Type.String() }) },
  },
});

// Licenses

const NullableText = (maxLength: number) => NullableString({ maxLength });

const licenseSettingsProperties = {
  status: StringEnum(licenseStatuses),
  expiresAt: NullableString({
    maxLength: limits.timestamp,
    description: "ISO 8601 timestamp with a zone; null: never expires",
  }),
  maxMachines: Type.Integer({ minimum: 0, maximum: limits.maxMachines }),
  edition: NullableText(limits.edition),
  editionName: NullableText(limits.edition),
  features: Type.Array(Type.String({ minLength: 1, maxLength: limits.feature }), {
    maxItems: limits.features,
  }),
  customerName: NullableText(limits.name),
  customerEmail: NullableText(limits.name),
  note: NullableText(limits.note),
  externalId: NullableText(limits.identifier),
  maxDeactivationsPer30Days: NullableInteger({
    minimum: deactivationLimitRange.min,
    maximum: deactivationLimitRange.max,
    description: `${churnLimitDescription}; overrides the product's; null: the product's applies`,
  }),
};
const optional = <P extends Record<string, TSchema>>(properties: P) =>
  Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, Type.Optional(v)])) as {
    [K in keyof P]: ReturnType<typeof Type.Optional<P[K]>>;
  };

/** A license's settings as the admin API takes them (expiresAt as ISO text). */
export const LicenseSettingsBody = Type.Object(optional(licenseSettingsProperties), {
  ...strict,
  minProperties: 1,
});
export type LicenseSettingsBody = Static<typeof LicenseSettingsBody>;

export const CreateLicenseBody = Type.Object(
  {
    productSlug: Slug,
    licenseKey: Type.Optional(Type.String({ minLength: 1, maxLength: limits.identifier })),
    ...optional(licenseSettingsProperties),
    maxMachines: licenseSettingsProperties.maxMachines,
  },
  strict,
);

export const License = Type.Object(
  {
    licenseKey: Type.String(),
    product: Type.String({ description: "The product's slug" }),
    status: StringEnum(licenseStatuses),
    expiresAt: NullableDateTime(),
    edition: NullableString(),
    editionName: NullableString(),
    features: Type.Array(Type.String()),
    maxMachines: Type.Integer(),
    activeMachines: Type.Integer(),
    customerName: NullableString(),
    customerEmail: NullableString(),
    note: NullableString(),
    externalId: NullableString(),
    maxDeactivationsPer30Days: NullableInteger({
      description: "The license's own churn limit; null: its product's applies",
    }),
    planId: NullableString({
      description:
        "The id of the plan the license was made from (its settings copied then); null: made " +
        "by hand",
    }),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  },
  { title: "License" },
);
export type License = Static<typeof License>;

export const Machine = Type.Object(
  {
    machineId: Type.String(),
    machineName: NullableString(),
    platform: NullableString(),
    activatedAt: DateTime(),
    lastSeenAt: DateTime(),
    appVersion: NullableString({
      description: "The app's version the machine last reported (SDK appVersion); null: none",
    }),
  },
  { title: "Machine" },
);
export type Machine = Static<typeof Machine>;

export const PastActivation = Type.Object(
  {
    ...Machine.properties,
    deactivatedAt: DateTime(),
    deactivatedBy: Type.Unsafe<"client" | "admin" | "lease" | null>({
      type: ["string", "null"],
      enum: ["client", "admin", "lease", null],
      description:
        "Who ended it: the app, an admin, or the server when the machine's lease lapsed; null " +
        "for one ended before this was recorded",
    }),
  },
  { title: "PastActivation" },
);
export type PastActivation = Static<typeof PastActivation>;

export const ActiveMachine = Type.Object(
  {
    ...Machine.properties,
    certificateExpiresAt: NullableDateTime(
      "When the machine's latest offline certificate expires; null: it holds none",
    ),
    leaseExpiresAt: NullableDateTime(
      "When the server frees the machine's slot unless it is seen again (the product's " +
        "machineLeaseDays); null: the product sets no lease",
    ),
  },
  { title: "ActiveMachine" },
);
export type ActiveMachine = Static<typeof ActiveMachine>;

export const OfflinePlace = Type.Object(
  {
    machineId: Type.String(),
    machineName: NullableString({ description: "As its last activation reported it" }),
    platform: NullableString({ description: "As its last activation reported it" }),
    deactivatedAt: NullableDateTime("When its last activation ended"),
    certificateIssuedAt: DateTime(),
    endsAt: DateTime("When its certificate expires, and with it the place; until then it counts"),
  },
  {
    title: "OfflinePlace",
    description:
      "A machine no longer active on the license that holds an unexpired certificate: it can " +
      "run offline until endsAt, so it keeps a place. Active machines plus offline places never " +
      "exceed maxMachines + the product's offlineAllowance",
  },
);
export type OfflinePlace = Static<typeof OfflinePlace>;

export const LicenseDetail = Type.Object(
  {
    ...License.properties,
    machines: Type.Array(ActiveMachine, {
      description:
        "Active machines in activation order: the first 200 (activeMachines counts them all)",
    }),
    machinesNextCursor: NullableString({
      description:
        "Set when the license has more than 200 active machines: pass as `cursor` to " +
        "GET /api/admin/licenses/{licenseKey}/machines for the next page; null otherwise",
    }),
    deactivationsLast30Days: Type.Integer({
      description: "The app's deactivations in the trailing 30 days: what the churn limit counts",
    }),
    machineLeaseDays: Product.properties.machineLeaseDays,
    pastActivations: Type.Array(PastActivation, {
      description: "Ended activations, newest first (at most 100)",
    }),
    offlinePlaces: Type.Array(OfflinePlace, {
      description:
        "Deactivated machines still running on a certificate, the soonest to end first (at " +
        "most 200)",
    }),
    offlineAllowance: Product.properties.offlineAllowance,
  },
  { title: "LicenseDetail" },
);
export type LicenseDetail = Static<typeof LicenseDetail>;

const licenseErrors = ["LICENSE_NOT_FOUND", "PRODUCT_NOT_IN_KEY"] as const;

export const listLicenses = contract({
  method: "GET",
  url: "/api/admin/licenses",
  operationId: "listLicenses",
  tag: "Admin: licenses",
  summary: "List licenses, newest first",
  auth: "licenses:read",
  schema: {
    querystring: Type.Object(
      {
        product: Type.Optional(Type.String({ maxLength: limits.identifier })),
        status: Type.Optional(StringEnum(licenseStatuses)),
        expired: Type.Optional(StringEnum(["true", "false"])),
        q: Type.Optional(
          Type.String({
            maxLength: limits.identifier,
            description:
              "Key prefix, or part of the customer's name or email, the external id or the note",
          }),
        ),
        externalId: Type.Optional(Type.String({ maxLength: limits.identifier })),
        ...PageQuery,
      },
      strict,
    ),
    response: { 200: Page(License) },
  },
});

export const createLicense = contract({
  method: "POST",
  url: "/api/admin/licenses",
  operationId: "createLicense",
  tag: "Admin: licenses",
  summary: "Create a license",
  auth: "licenses:write",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY", "LICENSE_KEY_TAKEN", "EXTERNAL_ID_TAKEN"],
  schema: { body: CreateLicenseBody, response: { 201: License } },
});

export const getLicense = contract({
  method: "GET",
  url: "/api/admin/licenses/:licenseKey",
  operationId: "getLicense",
  tag: "Admin: licenses",
  summary: "Get a license with its machines",
  auth: "licenses:read",
  errors: licenseErrors,
  schema: { params: LicenseKeyParams, response: { 200: LicenseDetail } },
});

export const updateLicense = contract({
  method: "PATCH",
  url: "/api/admin/licenses/:licenseKey",
  operationId: "updateLicense",
  tag: "Admin: licenses",
  summary: "Change a license's settings",
  auth: "licenses:write",
  errors: [...licenseErrors, "EXTERNAL_ID_TAKEN"],
  schema: { params: LicenseKeyParams, body: LicenseSettingsBody, response: { 200: License } },
});

const statusChange = (action: "suspend" | "revoke" | "reinstate", summary: string) =>
  contract({
    method: "POST",
    url: `/api/admin/licenses/:licenseKey/${action}`,
    operationId: `${action}License`,
    tag: "Admin: licenses",
    summary,
    auth: "licenses:write",
    errors: licenseErrors,
    schema: { params: LicenseKeyParams, response: { 200: License } },
  });
export const suspendLicense = statusChange("suspend", "Suspend a license");
export const revokeLicense = statusChange("revoke", "Revoke a license");
export const reinstateLicense = statusChange("reinstate", "Reinstate a license");

export const listMachines = contract({
  method: "GET",
  url: "/api/admin/licenses/:licenseKey/machines",
  operationId: "listMachines",
  tag: "Admin: licenses",
  summary: "A license's active machines, a page at a time, and its past activations",
  description:
    "Active machines in activation order (oldest first), cursor-paginated; `total` counts them " +
    "all. `past`: the ended activations, newest first (at most 100), on every page.",
  auth: "licenses:read",
  errors: licenseErrors,
  schema: {
    params: LicenseKeyParams,
    querystring: Type.Object(
      {
        limit: Type.Optional(
          Type.String({ pattern: "^[1-9][0-9]{0,2}$", description: "1 to 200, default 200" }),
        ),
        cursor: PageQuery.cursor,
      },
      strict,
    ),
    response: {
      200: Type.Object({
        ...Page(ActiveMachine).properties,
        total: Type.Integer({ description: "Every active machine of the license" }),
        past: Type.Array(PastActivation),
      }),
    },
  },
});

export const deactivateMachine = contract({
  method: "DELETE",
  url: "/api/admin/licenses/:licenseKey/machines/:machineId",
  operationId: "deactivateMachineByAdmin",
  tag: "Admin: licenses",
  summary: "Deactivate a machine (never limited by the churn limit)",
  auth: "licenses:write",
  errors: [...licenseErrors, "ACTIVATION_NOT_FOUND"],
  schema: {
    params: Type.Object({
      licenseKey: LicenseKeyParams.properties.licenseKey,
      machineId: Type.String({ minLength: 1, maxLength: limits.identifier }),
    }),
    response: {
      200: Type.Object({
        deactivated: Type.Literal(true),
        licenseKey: Type.String(),
        machineId: Type.String(),
      }),
    },
  },
});

export const endOfflinePlace = contract({
  method: "DELETE",
  url: "/api/admin/licenses/:licenseKey/offline-places/:machineId",
  operationId: "endOfflinePlace",
  tag: "Admin: licenses",
  summary: "End a deactivated machine's offline place before its certificate expires",
  description:
    "For a machine that will not come back (a stolen laptop): its certificate still works " +
    "offline until it expires, but no longer counts against the license's machines. 404 " +
    "OFFLINE_PLACE_NOT_FOUND when the machine holds none.",
  auth: "licenses:write",
  errors: [...licenseErrors, "OFFLINE_PLACE_NOT_FOUND"],
  schema: {
    params: deactivateMachine.schema.params,
    response: {
      200: Type.Object({
        ended: Type.Literal(true),
        licenseKey: Type.String(),
        machineId: Type.String(),
        endsAt: DateTime("When the certificate itself expires"),
      }),
    },
  },
});

// Releases

export const RolloutView = Type.Object(
  {
    state: StringEnum(rolloutStates, {
      description: "rolling: offered to `percent` of machines; paused: to no machine without it",
    }),
    percent: Type.Integer({
      minimum: 0,
      maximum: rolloutRange.maxPercent,
      description: "The share of machines the rollout reaches now (a schedule's steps begun)",
    }),
    stepHours: NullableInteger({
      description: `A schedule: a ${rolloutSteps}th more machines every stepHours; null: a set percentage`,
    }),
    startedAt: DateTime("When the rollout (or its schedule) started, pauses excluded"),
    pausedAt: NullableDateTime("When the rollout was paused; null while it rolls"),
  },
  { title: "Rollout" },
);
export type RolloutView = Static<typeof RolloutView>;

const rolloutFields = {
  critical: Type.Boolean({
    description: "Offered to every machine whatever its rollout (a pause still halts it)",
  }),
  rollout: Type.Union([RolloutView, Type.Null()], {
    description: "null: released to every machine",
  }),
};

export const ReleaseVersion = Type.Object(
  {
    version: Type.String(),
    channel: StringEnum(channels),
    ...rolloutFields,
    releaseNotes: NullableString({ description: "Markdown" }),
    releaseNotesHtml: NullableString({
      description:
        "The notes as the dashboard and the Sparkle appcast show them: sanitised HTML, rendered " +
        "when published (no raw HTML, links to http(s) and mailto only)",
    }),
    createdAt: DateTime(),
    updatedAt: DateTime(),
    yankedAt: NullableDateTime("When an admin withdrew the version from the feeds"),
    entries: Type.Array(
      Type.Object({
        platform: StringEnum(platforms),
        arch: StringEnum(arches),
        downloadUrl: Type.String({ format: "uri" }),
        signature: NullableString(),
        fileSize: NullableInteger(),
        sha512: NullableString(),
        updatedAt: DateTime(),
      }),
    ),
  },
  { title: "ReleaseVersion" },
);
export type ReleaseVersion = Static<typeof ReleaseVersion>;

export const UsageReport = Type.Object(
  {
    product: Type.String(),
    since: Type.String({ format: "date", description: "The first UTC day counted" }),
    downloads: Type.Array(
      Type.Object({
        version: Type.String(),
        platform: StringEnum(platforms),
        count: Type.Integer(),
      }),
    ),
    updateChecks: Type.Array(
      Type.Object({
        currentVersion: NullableString({ description: "null: the client sent none" }),
        platform: StringEnum(platforms),
        channel: StringEnum(channels),
        count: Type.Integer(),
      }),
    ),
    machinesByVersion: Type.Array(
      Type.Object({
        version: NullableString({
          description: "The app's version the machine reported; null: none reported",
        }),
        machines: Type.Integer(),
      }),
      { description: "Active machines now, per app version, most machines first" },
    ),
  },
  { title: "UsageReport" },
);
export type UsageReport = Static<typeof UsageReport>;

const VersionParams = Type.Object({
  slug: Slug,
  version: Type.String({ minLength: 1, maxLength: limits.identifier }),
});
const releaseErrors = ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY", "RELEASE_NOT_FOUND"] as const;

export const listReleases = contract({
  method: "GET",
  url: "/api/admin/products/:slug/releases",
  operationId: "listReleases",
  tag: "Admin: releases",
  summary: "A product's releases, newest version first",
  auth: "releases:read",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY"],
  schema: {
    params: SlugParams,
    response: { 200: Type.Object({ items: Type.Array(ReleaseVersion) }) },
  },
});

export const usage = contract({
  method: "GET",
  url: "/api/admin/products/:slug/usage",
  operationId: "getUsageReport",
  tag: "Admin: releases",
  summary: "Machines per version, downloads and update checks",
  description:
    "The product's active machines per app version, as the SDK reports it (appVersion with " +
    "activate, validate and checkout; null: machines whose app reported none). Downloads (through /api/downloads) " +
    "per version and platform, and update checks per client version, platform and channel, " +
    `summed over the last \`days\` UTC days (1 to ${usageReportDays.max}, ` +
    `default ${usageReportDays.default}). Counts and versions are written once a second.`,
  auth: "releases:read",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY"],
  schema: {
    params: SlugParams,
    querystring: Type.Object(
      { days: Type.Optional(Type.String({ pattern: "^[1-9][0-9]{0,2}$" })) },
      strict,
    ),
    response: { 200: UsageReport },
  },
});

export const deleteRelease = contract({
  method: "DELETE",
  url: "/api/admin/products/:slug/releases/:version",
  operationId: "deleteRelease",
  tag: "Admin: releases",
  summary: "Delete a version and all its entries",
  auth: "releases:write",
  errors: releaseErrors,
  schema: {
    params: VersionParams,
    response: { 200: Deleted({ product: Type.String(), version: Type.String() }) },
  },
});

const yankChange = (action: "yank" | "unyank", summary: string) =>
  contract({
    method: "POST",
    url: `/api/admin/products/:slug/releases/:version/${action}`,
    operationId: `${action}Release`,
    tag: "Admin: releases",
    summary,
    auth: "releases:write",
    errors: releaseErrors,
    schema: {
      params: VersionParams,
      response: {
        200: Type.Object({
          product: Type.String(),
          version: Type.String(),
          yankedAt: NullableDateTime(),
        }),
      },
    },
  });
export const yankRelease = yankChange("yank", "Withdraw a version from the feeds and downloads");
export const unyankRelease = yankChange("unyank", "Offer a yanked version again");

export const ReleaseRollout = Type.Object(
  { product: Type.String(), version: Type.String(), ...rolloutFields },
  { title: "ReleaseRollout" },
);
export type ReleaseRollout = Static<typeof ReleaseRollout>;

export const startRollout = contract({
  method: "POST",
  url: "/api/admin/products/:slug/releases/:version/rollout",
  operationId: "startRollout",
  tag: "Admin: releases",
  summary: "Put a version into a phased rollout, or change its percentage or schedule",
  description:
    "`percent` (1 to 100): that share of machines is offered the version from now on; raising it " +
    `only adds machines. \`stepHours\` (1 to ${rolloutRange.maxStepHours}): a schedule of ` +
    `${rolloutSteps} steps, a ${rolloutSteps}th more machines every stepHours from now. A paused ` +
    "rollout stays paused. Machines outside are offered the newest released version above theirs.",
  auth: "releases:write",
  errors: releaseErrors,
  schema: {
    params: VersionParams,
    body: Type.Union(
      [
        Type.Object(
          {
            percent: Type.Integer({
              minimum: rolloutRange.minPercent,
              maximum: rolloutRange.maxPercent,
            }),
          },
          strict,
        ),
        Type.Object(
          {
            stepHours: Type.Integer({
              minimum: rolloutRange.minStepHours,
              maximum: rolloutRange.maxStepHours,
            }),
          },
          strict,
        ),
      ],
      { title: "RolloutPlan" },
    ),
    response: { 200: ReleaseRollout },
  },
});

const rolloutChange = (action: "pause" | "resume" | "complete", summary: string) =>
  contract({
    method: "POST",
    url: `/api/admin/products/:slug/releases/:version/rollout/${action}`,
    operationId: `${action}Rollout`,
    tag: "Admin: releases",
    summary,
    auth: "releases:write",
    errors: [...releaseErrors, "NO_ROLLOUT"],
    schema: { params: VersionParams, response: { 200: ReleaseRollout } },
  });
export const pauseRollout = rolloutChange(
  "pause",
  "Halt a rollout: no machine without the version is offered it",
);
export const resumeRollout = rolloutChange(
  "resume",
  "Resume a paused rollout (a schedule continues where it stopped)",
);
export const completeRollout = rolloutChange(
  "complete",
  "Release a version in a rollout to every machine",
);

export const setCritical = contract({
  method: "POST",
  url: "/api/admin/products/:slug/releases/:version/critical",
  operationId: "setReleaseCritical",
  tag: "Admin: releases",
  summary: "Mark a version critical (offered to every machine whatever its rollout) or not",
  auth: "releases:write",
  errors: releaseErrors,
  schema: {
    params: VersionParams,
    body: Type.Object({ critical: Type.Boolean() }, strict),
    response: { 200: ReleaseRollout },
  },
});

export const deleteReleaseEntry = contract({
  method: "DELETE",
  url: "/api/admin/products/:slug/releases/:version/:platform/:arch",
  operationId: "deleteReleaseEntry",
  tag: "Admin: releases",
  summary: "Delete one platform/arch entry of a version",
  auth: "releases:write",
  errors: releaseErrors,
  schema: {
    params: Type.Object({
      ...VersionParams.properties,
      platform: StringEnum(platforms),
      arch: StringEnum(arches),
    }),
    response: {
      200: Deleted({
        product: Type.String(),
        version: Type.String(),
        platform: StringEnum(platforms),
        arch: StringEnum(arches),
      }),
    },
  },
});

// API keys

/** Who did something: an API key, a signed-in admin, the CLI, or the service by itself. */
export const AuditActor = Type.Object(
  {
    type: StringEnum(["api_key", "admin", "cli", "service"]),
    id: NullableString({
      description: "The API key's or the admin's id; null for the CLI and the service",
    }),
    label: Type.String({
      description: "The API key's name, the admin's email, or the CLI's user@host",
    }),
  },
  { title: "Actor" },
);
export type AuditActor = Static<typeof AuditActor>;

export const ApiKey = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    displayPrefix: Type.String({ description: "The secret's first characters, to recognise it" }),
    scopes: Type.Array(StringEnum(apiKeyScopes)),
    createdAt: DateTime(),
    lastUsedAt: NullableDateTime(),
    expiresAt: NullableDateTime(),
    revokedAt: NullableDateTime(),
    products: Type.Unsafe<string[] | null>({
      type: ["array", "null"],
      items: { type: "string" },
      description: "The slugs of the products the key is limited to; null: every product",
    }),
    createdBy: Type.Union([AuditActor, Type.Null()], {
      description:
        "Who created the key, as the audit log names an actor; null: a key made before " +
        "Shipkey recorded it",
    }),
  },
  { title: "ApiKey" },
);
export type ApiKey = Static<typeof ApiKey>;

export const CreatedApiKey = Type.Object(
  {
    ...ApiKey.properties,
    key: Type.String({ description: "The secret (shk_…), shown once, never stored" }),
  },
  { title: "CreatedApiKey" },
);
export type CreatedApiKey = Static<typeof CreatedApiKey>;

export const listApiKeys = contract({
  method: "GET",
  url: "/api/admin/api-keys",
  operationId: "listApiKeys",
  tag: "Admin: API keys",
  summary: "List API keys (never their secrets)",
  description:
    "Who holds which scopes is itself sensitive: api-keys:write. A key limited to products " +
    "lists only keys limited to some of its products.",
  auth: "api-keys:write",
  schema: { response: { 200: Type.Object({ items: Type.Array(ApiKey) }) } },
});

export const createApiKey = contract({
  method: "POST",
  url: "/api/admin/api-keys",
  operationId: "createApiKey",
  tag: "Admin: API keys",
  summary: "Create an API key; its secret is in this answer only",
  description:
    "An API key may create only keys holding a subset of its scopes and expiring no later than " +
    "itself (else 403 SCOPE_NOT_HELD) and, if it is limited to products, limited to some of them " +
    "(else 403 PRODUCT_NOT_IN_KEY); a signed-in admin may create any key.",
  auth: "api-keys:write",
  errors: ["SCOPE_NOT_HELD", "PRODUCT_NOT_IN_KEY", "PRODUCT_NOT_FOUND"],
  schema: {
    body: Type.Object(
      {
        name: Type.String({ minLength: 1, maxLength: limits.name }),
        scopes: Type.Array(StringEnum(apiKeyScopes), {
          minItems: 1,
          maxItems: apiKeyScopes.length,
        }),
        expiresAt: Type.Optional(
          NullableString({
            maxLength: limits.timestamp,
            description: "ISO 8601 timestamp with a zone; null: never",
          }),
        ),
        products: Type.Optional(
          Type.Unsafe<string[] | null>({
            type: ["array", "null"],
            description:
              "Slugs of the products the key is limited to (each must exist); omitted or null: " +
              "every product. A limited key is refused (403 PRODUCT_NOT_IN_KEY) on any other " +
              "product, and its lists hold only its products.",
            minItems: 1,
            maxItems: limits.productsPerScope,
            items: { type: "string", minLength: 1, maxLength: limits.identifier },
          }),
        ),
      },
      strict,
    ),
    response: { 201: CreatedApiKey },
  },
});

export const revokeApiKey = contract({
  method: "POST",
  url: "/api/admin/api-keys/:id/revoke",
  operationId: "revokeApiKey",
  tag: "Admin: API keys",
  summary: "Revoke an API key, and optionally the keys it created",
  description:
    "An API key may revoke only keys whose scopes it holds (else 403 SCOPE_NOT_HELD) and, if it " +
    "is limited to products, keys limited to some of them (else 403 PRODUCT_NOT_IN_KEY); a " +
    "signed-in admin may revoke any key. With withCreated true, the keys below it (the keys it " +
    "created, the keys those created, and so on) that are neither revoked nor expired are " +
    "revoked with it in one transaction, each under the same rules: one the caller may not " +
    "revoke refuses the whole request. A key with more than " +
    `${limits.keysRevokedWithCreated} keys below it, whatever their state, is refused (400 ` +
    "INVALID_FIELD_VALUE). An already revoked key keeps its revocation time, and withCreated " +
    "still revokes the keys below it.",
  auth: "api-keys:write",
  errors: ["API_KEY_NOT_FOUND", "SCOPE_NOT_HELD", "PRODUCT_NOT_IN_KEY", "INVALID_FIELD_VALUE"],
  schema: {
    params: Type.Object({ id: Type.String({ maxLength: limits.id }) }),
    body: Type.Unsafe<{ withCreated?: boolean } | null>({
      type: ["object", "null"],
      additionalProperties: false,
      properties: {
        withCreated: {
          type: "boolean",
          description: "Also revoke the keys it created, and the keys they created (default false)",
        },
      },
    }),
    response: {
      200: Type.Object(
        {
          ...ApiKey.properties,
          alsoRevoked: Type.Array(Type.String(), {
            description:
              "The ids of the keys revoked with it (withCreated), creators before the keys they " +
              "created; empty without withCreated",
          }),
        },
        { title: "RevokedApiKey" },
      ),
    },
  },
});

// Audit

export const AuditEntry = Type.Object(
  {
    id: Type.String(),
    at: DateTime(),
    actor: AuditActor,
    action: Type.String({ description: "For example license.create, release.publish" }),
    target: Type.Object({ type: Type.String(), id: Type.String() }),
    ip: NullableString(),
    details: Type.Record(Type.String(), Type.Unknown(), {
      description:
        "What changed; never a secret nor a license key. license.update, license.suspend, " +
        "license.revoke, license.reinstate and license.move: `changes`, each setting that changed " +
        '(status, maxMachines, expiresAt, product, ...) with its old and new value: {"maxMachines": ' +
        '{"from": 1, "to": 3}}',
    }),
  },
  { title: "AuditEntry" },
);
export type AuditEntry = Static<typeof AuditEntry>;

export const listAudit = contract({
  method: "GET",
  url: "/api/admin/audit",
  operationId: "listAuditEntries",
  tag: "Admin: audit",
  summary: "The audit log, newest first",
  description:
    "A key limited to products sees only entries about them. Filters narrow the list; every " +
    "filter given must hold.",
  auth: "audit:read",
  schema: {
    querystring: Type.Object(
      {
        actor: Type.Optional(
          Type.String({
            maxLength: limits.identifier,
            description: "The actor's label (an admin's email, an API key's name) or id, exactly",
          }),
        ),
        action: Type.Optional(
          Type.String({
            maxLength: limits.identifier,
            description: "An action (license.update), or a family of them (license: license.*)",
          }),
        ),
        target: Type.Optional(
          Type.String({
            maxLength: limits.identifier,
            description: "A target's id, or a license key (the license's entries)",
          }),
        ),
        from: Type.Optional(DateTime("Entries at or after this time")),
        to: Type.Optional(DateTime("Entries before this time")),
        ...PageQuery,
      },
      strict,
    ),
    response: { 200: Page(AuditEntry) },
  },
});
