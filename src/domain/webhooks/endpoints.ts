import type { Kysely, Selectable } from "kysely";
import type { DB, WebhookEndpointsTable } from "../../db/schema.js";
import { errorsOf, ShipkeyError } from "../../errors.js";
import { newId } from "../../lib/ids.js";
import { isoOrNull, toIso } from "../../lib/time.js";
import { assertMaxLength, assertSingleLine } from "../limits.js";
import type { MasterKey } from "../signing/key-material.js";
import { checkEndpointUrl } from "./address-guard.js";
import { newWebhookSecret, openWebhookSecret, sealWebhookSecret } from "./secrets.js";
import type { CreatedWebhookEndpoint, WebhookEndpoint } from "../../contracts/webhooks.js";
import {
  type WebhookEventType,
  webhookEventTypes,
  webhookLimits,
} from "../../contracts/vocabulary.js";

export type EndpointRow = Selectable<WebhookEndpointsTable>;

export interface EndpointSettings {
  url?: string;
  events?: string[];
  /** Product slugs (each must exist); null: every product. */
  products?: string[] | null;
  enabled?: boolean;
  description?: string | null;
}

/** What an endpoint's URL may be: WEBHOOKS_ALLOW_PRIVATE. */
export interface UrlPolicy {
  allowPrivate: boolean;
}

/**
 * `licenseData`: whether whoever sets the URL (here and in updateWebhookEndpoint) holds
 * licenses:read. Without it, what is sent to that URL has license keys masked and no customer,
 * so a key cannot read license data by pointing an endpoint at a receiver of its own.
 */
export async function createWebhookEndpoint(
  db: Kysely<DB>,
  masterKey: MasterKey,
  input: EndpointSettings & { url: string; events: string[] },
  policy: UrlPolicy,
  licenseData: boolean,
  now = Date.now(),
): Promise<CreatedWebhookEndpoint> {
  const id = newId("whe", now);
  const secret = newWebhookSecret();
  const sealed = sealWebhookSecret(masterKey, id, secret.bytes);
  const row: EndpointRow = {
    id,
    url: checkEndpointUrl(input.url, policy.allowPrivate),
    description: checkedDescription(input.description ?? null),
    events: JSON.stringify(checkedEvents(input.events)),
    products: await checkedProducts(db, input.products ?? null),
    enabled: input.enabled === false ? 0 : 1,
    secret_iv: sealed.iv,
    secret_ciphertext: sealed.ciphertext,
    secret_tag: sealed.tag,
    previous_secret_iv: null,
    previous_secret_ciphertext: null,
    previous_secret_tag: null,
    previous_secret_expires_at: null,
    consecutive_failures: 0,
    failing_since: null,
    disabled_reason: null,
    url_changed_at: null,
    withholds_license_data: licenseData ? 0 : 1,
    created_at: now,
    updated_at: now,
  };
  await db.insertInto("webhook_endpoints").values(row).execute();
  return { ...toEndpointView(row, now), secret: secret.text };
}

/**
 * Every refusal of a new endpoint's fields, in the order createWebhookEndpoint reports them (the
 * first): a form shows them all at once.
 */
export function newEndpointErrors(
  db: Kysely<DB>,
  input: EndpointSettings & { url: string; events: string[] },
  policy: UrlPolicy,
): Promise<ShipkeyError[]> {
  return endpointSettingsErrors(db, input, policy);
}

/**
 * Every refusal of the settings given (those left out are not checked), by the checks
 * createWebhookEndpoint and updateWebhookEndpoint make: a form shows them all at once.
 */
export async function endpointSettingsErrors(
  db: Kysely<DB>,
  settings: EndpointSettings,
  policy: UrlPolicy,
): Promise<ShipkeyError[]> {
  const { url, description, events, products } = settings;
  const errors = errorsOf([
    () => (url === undefined ? undefined : checkEndpointUrl(url, policy.allowPrivate)),
    () => (description === undefined ? undefined : checkedDescription(description)),
    () => (events === undefined ? undefined : checkedEvents(events)),
  ]);
  if (products === undefined) return errors;
  try {
    await checkedProducts(db, products);
  } catch (err) {
    if (!(err instanceof ShipkeyError)) throw err;
    errors.push(err);
  }
  return errors;
}

export async function listWebhookEndpoints(
  db: Kysely<DB>,
  now = Date.now(),
): Promise<WebhookEndpoint[]> {
  const rows = await db
    .selectFrom("webhook_endpoints")
    .selectAll()
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  return rows.map((row) => toEndpointView(row, now));
}

export async function requireEndpointRow(db: Kysely<DB>, id: string): Promise<EndpointRow> {
  const row = await db
    .selectFrom("webhook_endpoints")
    .selectAll()
    .where("id", "=", id)
    .executeTakeFirst();
  if (!row) throw endpointNotFound(id);
  return row;
}

export async function getWebhookEndpoint(
  db: Kysely<DB>,
  id: string,
  now = Date.now(),
): Promise<WebhookEndpoint> {
  return toEndpointView(await requireEndpointRow(db, id), now);
}

/**
 * How the audit log names an endpoint's URL: its origin (scheme, host and port), never its path
 * or query, which may be a bearer secret (Slack, Discord, Zapier URLs). Null for a URL that does
 * not parse (none stored does: each was checked).
 */
export function urlOrigin(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

/** The given settings; enabling clears the failures (and the reason the service disabled it). */
export async function updateWebhookEndpoint(
  db: Kysely<DB>,
  id: string,
  changes: EndpointSettings,
  policy: UrlPolicy,
  licenseData: boolean,
  now = Date.now(),
): Promise<WebhookEndpoint> {
  const set: Partial<EndpointRow> = { updated_at: now };
  if (changes.url !== undefined) {
    set.url = checkEndpointUrl(changes.url, policy.allowPrivate);
    // Setting the URL, even to the one it has, decides what is sent there from now on.
    set.withholds_license_data = licenseData ? 0 : 1;
  }
  if (changes.events !== undefined) set.events = JSON.stringify(checkedEvents(changes.events));
  if (changes.products !== undefined) set.products = await checkedProducts(db, changes.products);
  if (changes.description !== undefined) {
    set.description = checkedDescription(changes.description);
  }
  if (changes.enabled !== undefined) {
    set.enabled = changes.enabled ? 1 : 0;
    set.disabled_reason = null;
    if (changes.enabled) {
      set.consecutive_failures = 0;
      set.failing_since = null;
    }
  }
  const url = set.url;
  const updated = await db
    .updateTable("webhook_endpoints")
    .set(set)
    // Only a URL that differs from the stored one is a change (the old value, in the same row).
    .$if(url !== undefined, (update) =>
      update.set((eb) => ({
        url_changed_at: eb
          .case()
          .when("url", "<>", url ?? "")
          .then(now)
          .else(eb.ref("url_changed_at"))
          .end(),
      })),
    )
    .where("id", "=", id)
    .executeTakeFirst();
  if (!updated.numUpdatedRows) throw endpointNotFound(id);
  return getWebhookEndpoint(db, id, now);
}

export async function deleteWebhookEndpoint(db: Kysely<DB>, id: string): Promise<void> {
  await db.deleteFrom("webhook_deliveries").where("endpoint_id", "=", id).execute();
  const deleted = await db.deleteFrom("webhook_endpoints").where("id", "=", id).executeTakeFirst();
  if (!deleted.numDeletedRows) throw endpointNotFound(id);
}

/**
 * A new secret for the endpoint; the current one becomes the previous one and keeps signing
 * (beside the new one) for `graceSeconds`. Answers the endpoint with the new secret, shown once.
 */
export async function rotateWebhookSecret(
  db: Kysely<DB>,
  masterKey: MasterKey,
  id: string,
  graceSeconds: number,
  now = Date.now(),
): Promise<CreatedWebhookEndpoint> {
  if (
    !Number.isInteger(graceSeconds) ||
    graceSeconds < 0 ||
    graceSeconds > webhookLimits.maxGraceSeconds
  ) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `graceSeconds must be a whole number from 0 to ${webhookLimits.maxGraceSeconds}`,
      { field: "graceSeconds" },
    );
  }
  const row = await requireEndpointRow(db, id);
  const secret = newWebhookSecret();
  const sealed = sealWebhookSecret(masterKey, id, secret.bytes);
  const keepPrevious = graceSeconds > 0;
  await db
    .updateTable("webhook_endpoints")
    .set({
      secret_iv: sealed.iv,
      secret_ciphertext: sealed.ciphertext,
      secret_tag: sealed.tag,
      previous_secret_iv: keepPrevious ? row.secret_iv : null,
      previous_secret_ciphertext: keepPrevious ? row.secret_ciphertext : null,
      previous_secret_tag: keepPrevious ? row.secret_tag : null,
      previous_secret_expires_at: keepPrevious ? now + graceSeconds * 1000 : null,
      updated_at: now,
    })
    .where("id", "=", id)
    .execute();
  return { ...(await getWebhookEndpoint(db, id, now)), secret: secret.text };
}

/** The secrets that sign a delivery now: the current one, and the previous one in its grace. */
export function signingSecrets(masterKey: MasterKey, row: EndpointRow, now: number): Buffer[] {
  const secrets = [
    openWebhookSecret(masterKey, row.id, {
      iv: row.secret_iv,
      ciphertext: row.secret_ciphertext,
      tag: row.secret_tag,
    }),
  ];
  if (
    row.previous_secret_iv !== null &&
    row.previous_secret_ciphertext !== null &&
    row.previous_secret_tag !== null &&
    row.previous_secret_expires_at !== null &&
    row.previous_secret_expires_at > now
  ) {
    secrets.push(
      openWebhookSecret(masterKey, row.id, {
        iv: row.previous_secret_iv,
        ciphertext: row.previous_secret_ciphertext,
        tag: row.previous_secret_tag,
      }),
    );
  }
  return secrets;
}

/** Every endpoint's secrets sealed again under another master key (`shipkey master-key rotate`). */
export async function resealWebhookSecrets(
  db: Kysely<DB>,
  from: MasterKey,
  to: MasterKey,
): Promise<number> {
  const rows = await db.selectFrom("webhook_endpoints").selectAll().execute();
  for (const row of rows) {
    const reseal = (iv: string, ciphertext: string, tag: string) =>
      sealWebhookSecret(to, row.id, openWebhookSecret(from, row.id, { iv, ciphertext, tag }));
    const current = reseal(row.secret_iv, row.secret_ciphertext, row.secret_tag);
    const previous =
      row.previous_secret_iv !== null &&
      row.previous_secret_ciphertext !== null &&
      row.previous_secret_tag !== null
        ? reseal(row.previous_secret_iv, row.previous_secret_ciphertext, row.previous_secret_tag)
        : null;
    await db
      .updateTable("webhook_endpoints")
      .set({
        secret_iv: current.iv,
        secret_ciphertext: current.ciphertext,
        secret_tag: current.tag,
        previous_secret_iv: previous?.iv ?? null,
        previous_secret_ciphertext: previous?.ciphertext ?? null,
        previous_secret_tag: previous?.tag ?? null,
      })
      .where("id", "=", row.id)
      .execute();
  }
  return rows.length;
}

export function toEndpointView(row: EndpointRow, now: number): WebhookEndpoint {
  const previousActive =
    row.previous_secret_expires_at !== null && row.previous_secret_expires_at > now;
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    events: JSON.parse(row.events) as WebhookEventType[],
    products: row.products === null ? null : (JSON.parse(row.products) as string[]),
    enabled: row.enabled === 1,
    disabledReason: row.disabled_reason,
    licenseDataWithheld: row.withholds_license_data === 1,
    consecutiveFailures: row.consecutive_failures,
    previousSecretExpiresAt: previousActive ? isoOrNull(row.previous_secret_expires_at) : null,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

export const endpointNotFound = (id: string) =>
  new ShipkeyError("WEBHOOK_ENDPOINT_NOT_FOUND", `Webhook endpoint ${id} not found`);

function checkedEvents(events: string[]): WebhookEventType[] {
  if (events.length === 0) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", "events must name at least one event type", {
      field: "events",
    });
  }
  for (const [i, type] of events.entries()) {
    if (!(webhookEventTypes as readonly string[]).includes(type)) {
      throw new ShipkeyError(
        "INVALID_FIELD_VALUE",
        `unknown event type "${type}"; known types: ${webhookEventTypes.join(", ")}`,
        { field: `events[${i}]` },
      );
    }
  }
  return [...new Set(events)] as WebhookEventType[];
}

function checkedDescription(description: string | null): string | null {
  if (description === null || description === "") return null;
  assertMaxLength("description", description, webhookLimits.description);
  assertSingleLine("description", description);
  return description;
}

/** The slugs as stored (JSON), each an existing product; null: every product. */
async function checkedProducts(db: Kysely<DB>, slugs: string[] | null): Promise<string | null> {
  if (slugs === null) return null;
  if (slugs.length === 0) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      "products must name at least one product (null: every product)",
      { field: "products" },
    );
  }
  const unique = [...new Set(slugs)];
  const found = await db
    .selectFrom("products")
    .select("slug")
    .where("slug", "in", unique)
    .execute();
  for (const slug of unique) {
    if (!found.some((row) => row.slug === slug)) {
      throw new ShipkeyError("INVALID_FIELD_VALUE", `products: no product "${slug}"`, {
        field: `products[${slugs.indexOf(slug)}]`,
      });
    }
  }
  return JSON.stringify(unique);
}
