import type { Generated } from "kysely";
import type {
  Arch,
  Channel,
  LicenseStatus,
  Platform,
  PlanReaction,
  SigningKeyStatus,
  EmailKind,
  EmailState,
  WebhookDeliveryStatus,
} from "../contracts/vocabulary.js";
import type {
  IntegrationEventsTable,
  IntegrationOrdersTable,
  IntegrationPricesTable,
  IntegrationSecretsTable,
  IntegrationsTable,
} from "./schema-integrations.js";

export type {
  IntegrationEventsTable,
  IntegrationOrdersTable,
  IntegrationPricesTable,
  IntegrationSecretsTable,
  IntegrationsTable,
};

/**
 * Table types as Kysely sees them. Timestamps are integer epoch milliseconds on both dialects
 * (portable, exact to the millisecond, cheap to compare); JSON-valued columns are TEXT.
 */
export interface ProductsTable {
  id: string;
  slug: string;
  name: string;
  created_at: number;
  /** 1: the feeds and downloads answer only machines activated on a usable license. */
  updates_require_license: Generated<number>;
  /** 1: the feeds hand out the counted /api/downloads redirect instead of the stored URL. */
  download_redirects: Generated<number>;
  /** The Tauri updater's minisign public key (tauri.conf.json's form); null when unset. */
  tauri_public_key: string | null;
  /** How long a license certificate lasts, in seconds (default 7 days, at most 90). */
  offline_period_seconds: number;
  /** Machines beyond max_machines that may hold an unexpired certificate at once (default 1). */
  offline_allowance: Generated<number>;
  /** Public deactivations allowed per license in 30 days; null: no limit. */
  max_deactivations_per_30_days: number | null;
  /** Days a machine keeps its slot unseen (domain/licenses/machine-leases.ts); null: for ever. */
  machine_lease_days: number | null;
}

/** A product's Ed25519 key pair; the private key only ever stored encrypted (AES-256-GCM). */
export interface SigningKeysTable {
  /** The JWK thumbprint (RFC 7638) of the public key. */
  kid: string;
  product_id: string;
  /** The raw 32-byte public key, base64url: the JWK's `x`. */
  public_x: string;
  /** AES-256-GCM of the PKCS#8 DER private key under the master key, base64 each. */
  private_key_iv: string;
  private_key_ciphertext: string;
  private_key_tag: string;
  /**
   * One `current` key per product, which signs; at most one `next` key, published but signing
   * nothing until promoted; `retired` keys stay published until removed.
   */
  status: SigningKeyStatus;
  created_at: number;
  retired_at: number | null;
  /** Compact JWS by the key current when this one was prepared, naming this key; null if none. */
  endorsement: string | null;
}

export interface LicensesTable {
  id: string;
  license_key: string;
  product_id: string;
  status: LicenseStatus;
  expires_at: number | null;
  edition: string | null;
  edition_name: string | null;
  /** JSON array of strings. */
  features: string;
  max_machines: number;
  /** Slots in use; changed only together with an activation row, in one transaction. */
  active_machines: number;
  created_at: number;
  updated_at: number;
  customer_name: string | null;
  customer_email: string | null;
  note: string | null;
  /** The caller's own reference (an order id); unique per product when set. */
  external_id: string | null;
  /** Overrides the product's max_deactivations_per_30_days when set. */
  max_deactivations_per_30_days: number | null;
  /** The plan the license was made from; null for a license made by hand. */
  plan_id: string | null;
  /** The end of the updates window its plan gave it; null: updates while the license is valid. */
  updates_until: number | null;
}

/** A product's license template: a license made from it copies these settings. */
export interface PlansTable {
  id: string;
  product_id: string;
  /** The vendor's stable code for the plan, unique per product. */
  slug: string;
  name: string;
  edition: string | null;
  edition_name: string | null;
  /** JSON array of strings. */
  features: string;
  /** Machine slots per unit bought: a license of quantity n gets max_machines × n. */
  max_machines: number;
  /** null: perpetual. */
  duration_days: number | null;
  /** null: updates for as long as the license is valid. */
  updates_window_days: number | null;
  /** 1: a subscription, whose license expires at the paid period's end plus grace_days. */
  subscription: number;
  grace_days: number;
  on_refund: PlanReaction;
  on_chargeback: PlanReaction;
  /** The lease of a floating plan's seats in minutes; null: not floating. */
  floating_lease_minutes: number | null;
  /** An archived plan makes no new license; null while in use. */
  archived_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface ActivationsTable {
  id: string;
  license_id: string;
  machine_id: string;
  machine_name: string | null;
  platform: string | null;
  activated_at: number;
  last_seen_at: number;
  /** null while the activation holds a slot. */
  deactivated_at: number | null;
  /**
   * Who ended it: the public endpoint ("client"), an admin ("admin") or the lease sweep ("lease",
   * domain/licenses/machine-leases.ts); null while active.
   */
  deactivated_by: "client" | "admin" | "lease" | null;
  /**
   * The app's version the machine last reported (the SDK's appVersion, semver); null: never
   * reported. Validate's goes through the last-seen flush.
   */
  app_version: string | null;
}

/** The latest certificate issued to a machine of a license: it counts until expires_at. */
export interface LicenseCertificatesTable {
  license_id: string;
  machine_id: string;
  issued_at: number;
  expires_at: number;
}

/** One row (id 1): a value sealed under the master key, which proves a key is the right one. */
export interface MasterKeyCheckTable {
  id: number;
  value: string;
  created_at: number;
}

/** A running server's heartbeat: commands for a stopped service refuse while one is fresh. */
export interface ServiceProcessesTable {
  id: string;
  hostname: string;
  pid: number;
  started_at: number;
  heartbeat_at: number;
}

export interface ReleaseVersionsTable {
  id: string;
  product_id: string;
  version: string;
  channel: Channel;
  release_notes: string | null;
  /** The notes rendered to sanitised HTML when written (domain/releases/release-notes.ts). */
  release_notes_html: string | null;
  created_at: number;
  updated_at: number;
  /** When an admin withdrew the version; null while the feeds offer it. */
  yanked_at: number | null;
  /**
   * Semver precedence as text (lib/version-sort-key.ts): the feeds sort on it in SQL. "" on a row
   * written by hand, which the feeds never offer.
   */
  sort_key: Generated<string>;
  /** 1: offered to every machine whatever its rollout (0020_rollouts). */
  critical: Generated<number>;
  /** Set while the version is in a phased rollout (domain/releases/rollout.ts); null: released. */
  rollout_started_at: number | null;
  /** The share of machines offered the version, 1 to 100 (a rollout by percentage). */
  rollout_percent: number | null;
  /** A schedule: a seventh more machines every this many hours from rollout_started_at. */
  rollout_step_hours: number | null;
  /** Set while the rollout is halted. */
  rollout_paused_at: number | null;
}

export interface ReleaseArtifactsTable {
  id: string;
  version_id: string;
  platform: Platform;
  arch: Arch;
  download_url: string;
  signature: string | null;
  file_size: number | null;
  /** Base64 of the artifact's SHA-512 digest (electron-builder's form), when published. */
  sha512: string | null;
  /** 1 when first written, +1 on each replacement: tells "created" from "updated" atomically. */
  revision: number;
  created_at: number;
  updated_at: number;
}

export interface ApiKeysTable {
  id: string;
  name: string;
  /** Hex SHA-256 of the whole secret; the secret itself is never stored. */
  key_hash: string;
  display_prefix: string;
  /** JSON array of strings. */
  scopes: string;
  created_at: number;
  last_used_at: number | null;
  expires_at: number | null;
  revoked_at: number | null;
  /** JSON array of product ids the key is limited to; null: every product. */
  products: string | null;
  /**
   * Who created the key, as the audit log names an actor (type, id, label); all null for a key
   * made before these columns.
   */
  created_by_type: AuditActorType | null;
  created_by_id: string | null;
  created_by_label: string | null;
}

/** "service": what the service did by itself (disabling a failing webhook endpoint). */
export type AuditActorType = "api_key" | "admin" | "cli" | "service";

export interface AuditLogTable {
  id: string;
  at: number;
  actor_type: AuditActorType;
  actor_id: string | null;
  actor_label: string;
  /** e.g. license.create, api_key.revoke */
  action: string;
  target_type: string;
  target_id: string;
  ip: string | null;
  /** JSON object of what changed; never a secret. */
  details: string;
}

export interface AdminsTable {
  id: string;
  /** Stored lowercased. */
  email: string;
  /** argon2id PHC string. */
  password_hash: string;
  created_at: number;
}

export interface AdminSessionsTable {
  /** SHA-256 hex of the session token; the token itself lives only in the browser's cookie. */
  id_hash: string;
  admin_id: string;
  csrf_token: string;
  created_at: number;
  expires_at: number;
}

/** An admin API Idempotency-Key: claimed while its request runs, then the answer to replay. */
export interface IdempotencyKeysTable {
  /** Who sent the key: "api_key:<id>" or "admin:<id>"; callers never see each other's keys. */
  caller: string;
  key: string;
  /** Hex SHA-256 of method, URL and body. */
  fingerprint: string;
  created_at: number;
  /** When the request's write committed (in its transaction); null before, or for a failure. */
  applied_at: number | null;
  /** null while the first request runs. */
  status_code: number | null;
  /** JSON object of the headers to replay. */
  response_headers: string | null;
  /** null when the answer held a secret and is not kept. */
  response_body: string | null;
}

/** One row, written by /readyz to tell whether the database takes writes. */
export interface ReadinessProbeTable {
  id: number;
  checked_at: number;
}

/** Downloads through the redirect, per version, platform and UTC day (YYYY-MM-DD). */
export interface DownloadCountsTable {
  version_id: string;
  platform: Platform;
  day: string;
  /** bigint: PostgreSQL returns it as a string; read it with Number(). */
  count: number;
}

/** Feed requests per product, current version ("" unknown), platform, channel and UTC day. */
export interface UpdateChecksTable {
  product_id: string;
  day: string;
  current_version: string;
  platform: Platform;
  channel: Channel;
  count: number;
}

/** What the license endpoints did per product, UTC day, event and refusal code. */
export interface DailyCountsTable {
  day: string;
  product_id: string;
  event: string;
  /** The refusal's code for a refused event, else "". */
  code: string;
  count: number;
}

/** Where webhook events go; the secret only ever stored sealed under the master key. */
export interface WebhookEndpointsTable {
  id: string;
  url: string;
  description: string | null;
  /** JSON array of event types. */
  events: string;
  /** JSON array of product slugs the endpoint hears about; null: every product. */
  products: string | null;
  enabled: number;
  /** AES-256-GCM of the secret's bytes under the master key, base64 each. */
  secret_iv: string;
  secret_ciphertext: string;
  secret_tag: string;
  /** The secret before the last rotation, signing too until previous_secret_expires_at. */
  previous_secret_iv: string | null;
  previous_secret_ciphertext: string | null;
  previous_secret_tag: string | null;
  previous_secret_expires_at: number | null;
  /** Failed attempts since the last success, and when the first of them was. */
  consecutive_failures: number;
  failing_since: number | null;
  /** Why the service disabled the endpoint; null when enabled, or disabled by an admin. */
  disabled_reason: string | null;
  /**
   * When the URL last changed; null: the URL the endpoint was made with. Redelivering an event
   * from before it needs licenses:read too (the event was meant for another receiver).
   */
  url_changed_at: number | null;
  /**
   * 1: whoever last set the URL lacked licenses:read, so what is sent there has license keys
   * masked and no customer (webhooks/license-data.ts).
   */
  withholds_license_data: Generated<number>;
  created_at: number;
  updated_at: number;
}

/** The outbox: one event for one endpoint, from its cause's transaction to delivered or failed. */
export interface WebhookDeliveriesTable {
  /** The event's id: the webhook-id header of every attempt, for every endpoint. */
  event_id: string;
  endpoint_id: string;
  event_type: string;
  /** The JSON body sent. */
  payload: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  /** When the next attempt is due (pending only). */
  next_attempt_at: number | null;
  /** A process attempting it holds it until then; after, another may take it over. */
  claimed_until: number | null;
  last_attempt_at: number | null;
  response_status: number | null;
  last_error: string | null;
  duration_ms: number | null;
  created_at: number;
}

/** The e-mail outbox: one message, from its cause's transaction to sent or failed. */
export interface EmailMessagesTable {
  id: string;
  /** One message per key: the cause's own (an order id and the kind, say). */
  idempotency_key: string;
  kind: EmailKind;
  product_id: string | null;
  license_id: string | null;
  to_address: string;
  to_name: string | null;
  /** As rendered when queued: what is sent, and sent again on a resend. */
  subject: string;
  text_body: string;
  html_body: string;
  state: EmailState;
  attempts: number;
  /** When the next attempt is due (pending only). */
  next_attempt_at: number | null;
  /** A process sending it holds it until then (sending only); after, another takes it over. */
  claimed_until: number | null;
  last_attempt_at: number | null;
  /** The last attempt's SMTP reply code; null when there was no reply (a connection error). */
  last_response_code: number | null;
  /** The last attempt's SMTP reply, or the connection error. */
  last_response: string | null;
  /** The Message-ID header of the message sent. */
  message_id: string | null;
  sent_at: number | null;
  created_at: number;
  updated_at: number;
}

/** A product's e-mail settings: no row, both null. */
export interface ProductEmailSettingsTable {
  product_id: string;
  /** The name messages are signed with; null: the product's name. */
  vendor_name: string | null;
  /** The download link license-delivered messages give; null: none. */
  download_url: string | null;
  /** 1: a license-expiring message 7 days before each of its licenses' expiry. */
  expiry_reminders: Generated<number>;
  updated_at: number;
}

/** A product's own subject and body for one kind of message; no row: the default text. */
export interface EmailTemplatesTable {
  product_id: string;
  kind: EmailKind;
  subject: string;
  body: string;
  updated_at: number;
}

export interface DB {
  admins: AdminsTable;
  admin_sessions: AdminSessionsTable;
  audit_log: AuditLogTable;
  products: ProductsTable;
  licenses: LicensesTable;
  plans: PlansTable;
  activations: ActivationsTable;
  release_versions: ReleaseVersionsTable;
  release_artifacts: ReleaseArtifactsTable;
  api_keys: ApiKeysTable;
  readiness_probe: ReadinessProbeTable;
  idempotency_keys: IdempotencyKeysTable;
  download_counts: DownloadCountsTable;
  update_checks: UpdateChecksTable;
  daily_counts: DailyCountsTable;
  signing_keys: SigningKeysTable;
  license_certificates: LicenseCertificatesTable;
  master_key_check: MasterKeyCheckTable;
  service_processes: ServiceProcessesTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  email_messages: EmailMessagesTable;
  product_email_settings: ProductEmailSettingsTable;
  email_templates: EmailTemplatesTable;
  integrations: IntegrationsTable;
  integration_secrets: IntegrationSecretsTable;
  integration_events: IntegrationEventsTable;
  integration_prices: IntegrationPricesTable;
  integration_orders: IntegrationOrdersTable;
}
