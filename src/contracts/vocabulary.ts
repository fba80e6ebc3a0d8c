/**
 * The service's vocabulary, defined once: enums and limits that the contracts, the database
 * schema, the domain and the dashboard share. Column sizes in the schema match `limits`.
 */
export const licenseStatuses = ["ACTIVE", "SUSPENDED", "REVOKED"] as const;
export type LicenseStatus = (typeof licenseStatuses)[number];

export const channels = ["STABLE", "BETA", "ALPHA"] as const;
export type Channel = (typeof channels)[number];

export const platforms = ["WINDOWS", "MACOS", "LINUX"] as const;
export type Platform = (typeof platforms)[number];

export const arches = ["X64", "ARM64"] as const;
export type Arch = (typeof arches)[number];

export const signingKeyStatuses = ["current", "next", "retired"] as const;
export type SigningKeyStatus = (typeof signingKeyStatuses)[number];

export const apiKeyScopes = [
  "releases:write",
  "releases:read",
  "products:read",
  "products:write",
  "licenses:read",
  "licenses:write",
  "api-keys:write",
  "audit:read",
  "webhooks:write",
] as const;
export type ApiKeyScope = (typeof apiKeyScopes)[number];

/** Documented request limits (docs/reference/limits.md). */
export const limits = {
  identifier: 255,
  machineName: 255,
  platform: 255,
  /** The app's version an SDK reports (appVersion): semver, at most this long. */
  appVersion: 128,
  name: 255,
  edition: 255,
  feature: 255,
  features: 100,
  downloadUrl: 2048,
  signature: 8 * 1024,
  tauriPublicKey: 1024,
  releaseNotes: 64 * 1024,
  note: 4096,
  releasesPerPublish: 50,
  licenseBodyBytes: 64 * 1024,
  publishBodyBytes: 1024 * 1024,
  /** A record's id (a key's kid, an endpoint's or an event's id) and an ISO 8601 timestamp. */
  id: 64,
  timestamp: 64,
  /** The products an API key or a webhook endpoint is limited to. */
  productsPerScope: 100,
  /** The keys one revocation revokes with the key, below it (withCreated). */
  keysRevokedWithCreated: 1000,
  idempotencyKey: 255,
  email: 255,
  password: 1024,
  /** A license's maxMachines, and the largest count any counter reaches. */
  maxMachines: 2_147_483_647,
} as const;

/** What a full refund or a chargeback does to a plan's license. */
export const planReactions = ["revoke", "suspend", "nothing"] as const;
export type PlanReaction = (typeof planReactions)[number];

/**
 * A plan's numbers (domain/plans/plans.ts): its duration, updates window and grace in days, and
 * a floating seat's lease in minutes.
 */
export const planRanges = {
  maxDays: 36_500,
  maxGraceDays: 365,
  minLeaseMinutes: 1,
  maxLeaseMinutes: 1440,
  /** Units of one purchase (seats = the plan's machines × quantity). */
  maxQuantity: 10_000,
} as const;

/** Pages of the admin API's lists. */
export const pageLimits = { default: 50, max: 200 } as const;

/** A license certificate's lifetime: 7 days unless the product says otherwise, never more than 90. */
export const offlinePeriod = {
  defaultSeconds: 7 * 86_400,
  minSeconds: 60,
  maxSeconds: 90 * 86_400,
} as const;

/** A product's offline allowance (default 1). */
export const offlineAllowanceRange = { min: 0, max: 100, default: 1 } as const;

/** A churn limit: public deactivations per license in the trailing 30 days. */
export const deactivationLimitRange = { min: 0, max: 10_000 } as const;

/** A machine lease: days a machine keeps its slot unseen (off by default). */
export const machineLeaseDaysRange = { min: 1, max: 3650 } as const;

/** The usage report's window in days. */
export const usageReportDays = { default: 30, max: 366 } as const;

/**
 * Phased rollouts (domain/releases/rollout.ts): a percentage of machines, or a schedule of
 * `steps` steps (Sparkle's seven phased groups) of 1 to `maxStepHours` hours each.
 */
export const rolloutSteps = 7;
export const rolloutRange = { minPercent: 1, maxPercent: 100, minStepHours: 1, maxStepHours: 720 };
export const rolloutStates = ["rolling", "paused"] as const;

/** The events a webhook endpoint can subscribe to (docs/webhooks.md). */
export const webhookEventTypes = [
  "license.created",
  "license.updated",
  "license.suspended",
  "license.revoked",
  "license.reinstated",
  "machine.activated",
  "machine.deactivated",
  "machine.lease_expired",
  "activation.refused",
  "certificate.issued",
  "release.published",
  "release.yanked",
  "release.rollout_changed",
  "release.critical_changed",
  "api_key.created",
  "api_key.revoked",
  "email.failed",
  "order.paid",
  "order.refunded",
  "order.disputed",
  "license.renewed",
  "license.payment_failed",
] as const;
export type WebhookEventType = (typeof webhookEventTypes)[number];

/** The event an admin sends to try an endpoint; delivered to that endpoint only. */
export const webhookTestEvent = "webhook.test";

export const webhookDeliveryStatuses = ["pending", "delivered", "failed"] as const;
export type WebhookDeliveryStatus = (typeof webhookDeliveryStatuses)[number];

/** Webhook endpoints: their URL's length, and how long a rotated-out secret may keep signing. */
export const webhookLimits = {
  url: 2048,
  description: 255,
  maxGraceSeconds: 7 * 86_400,
  defaultGraceSeconds: 86_400,
} as const;

/**
 * The e-mail the service sends a customer (docs/email.md): each a subject and a body per
 * product, default texts in domain/email/default-templates.ts.
 */
export const emailKinds = [
  "license_delivered",
  "payment_failed",
  "license_expiring",
  "license_suspended",
  "license_revoked",
] as const;
export type EmailKind = (typeof emailKinds)[number];

/** A message of the outbox: waiting, held by a process sending it, sent, or failed for good. */
export const emailStates = ["pending", "sending", "sent", "failed"] as const;
export type EmailState = (typeof emailStates)[number];

/** The placeholders a template may use; each kind fills the ones it knows, the rest are empty. */
export const emailPlaceholders = [
  "productName",
  "vendorName",
  "customerName",
  "customerEmail",
  "licenseKey",
  "maxMachines",
  "expiresAt",
  "downloadUrl",
  "portalUrl",
] as const;
export type EmailPlaceholder = (typeof emailPlaceholders)[number];

/** A template's subject and body, and a product's e-mail settings. */
export const emailLimits = {
  subject: 255,
  body: 16 * 1024,
  vendorName: 255,
  downloadUrl: 2048,
  /** The SMTP reply kept of a message's last attempt. */
  reply: 1000,
} as const;
/** Payment providers an integration connects (docs/selling.md). */
export const integrationProviders = ["stripe", "paddle", "lemonsqueezy"] as const;
export type IntegrationProvider = (typeof integrationProviders)[number];

/** live: events in test mode are ignored; test: events in live mode are ignored. */
export const integrationModes = ["live", "test"] as const;
export type IntegrationMode = (typeof integrationModes)[number];

export const integrationEventStatuses = ["processed", "ignored", "waiting"] as const;
export type IntegrationEventStatus = (typeof integrationEventStatuses)[number];

/**
 * Integrations: a signing secret's length, the secrets held at once (two during a rotation),
 * the largest webhook body accepted, and Paddle's signature tolerance.
 */
export const integrationLimits = {
  secretMinLength: 6,
  secretMaxLength: 255,
  secretsAtOnce: 2,
  description: 255,
  webhookBodyBytes: 512 * 1024,
  defaultPaddleToleranceSeconds: 5,
  maxPaddleToleranceSeconds: 300,
} as const;

/** What a quantity bought means: seats (one license, the plan's slots × quantity) or licenses. */
export const quantityMeanings = ["seats", "licenses"] as const;
export type QuantityMeaning = (typeof quantityMeanings)[number];

/** An order's state: paid, refunded (in full), disputed (a chargeback open or lost). */
export const orderStates = ["paid", "refunded", "disputed"] as const;
export type OrderState = (typeof orderStates)[number];
