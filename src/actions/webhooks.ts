import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import { actorHoldsScope } from "../domain/api-keys/key-authority.js";
import type { MasterKey } from "../domain/signing/key-material.js";
import { type Actor, withAudit } from "../domain/audit/audit-log.js";
import type { IdempotencyClaim } from "../domain/idempotency/idempotency-keys.js";
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  type EndpointSettings,
  rotateWebhookSecret,
  toEndpointView,
  updateWebhookEndpoint,
  urlOrigin,
  type UrlPolicy,
} from "../domain/webhooks/endpoints.js";
import { redeliverWebhook, sendWebhookTest } from "../domain/webhooks/deliveries.js";
import type { WebhookEndpoint } from "../contracts/webhooks.js";

// Webhook endpoints, their secrets and deliveries: the use cases' actions. Each runs its checks, its rows, its webhook events and its
// audit entry in one transaction (withAudit), so the admin API, the dashboard and the CLI record
// the same entry whichever way a write was made. Details never hold a secret.

const endpointTarget = (id: string) => ({ type: "webhook_endpoint", id });

/** Never the secret: the URL's origin (urlOrigin: never its path or query), events and products. */
export const createWebhookEndpointAudited = (
  db: Kysely<DB>,
  actor: Actor,
  masterKey: MasterKey,
  input: EndpointSettings & { url: string; events: string[] },
  policy: UrlPolicy,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "webhook_endpoint.create",
    async (trx) =>
      createWebhookEndpoint(
        trx,
        masterKey,
        input,
        policy,
        await actorHoldsScope(trx, actor, "licenses:read"),
      ),
    (created) => ({
      target: endpointTarget(created.id),
      details: {
        url: urlOrigin(created.url),
        events: created.events,
        products: created.products,
      },
    }),
    idempotency,
  );

export const updateWebhookEndpointAudited = (
  db: Kysely<DB>,
  actor: Actor,
  id: string,
  changes: EndpointSettings,
  policy: UrlPolicy,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "webhook_endpoint.update",
    async (trx) => {
      // Read without failing first: updateWebhookEndpoint checks the settings before the id.
      const row = await trx
        .selectFrom("webhook_endpoints")
        .selectAll()
        .where("id", "=", id)
        .executeTakeFirst();
      const now = Date.now();
      const before = row && toEndpointView(row, now);
      const licenseData = await actorHoldsScope(trx, actor, "licenses:read");
      const endpoint = await updateWebhookEndpoint(trx, id, changes, policy, licenseData);
      return { endpoint, changes: before ? endpointChanges(before, endpoint) : {} };
    },
    // What actually changed, each setting with its old and new value, as license.update does;
    // the URL as its origins only.
    ({ changes: values }) => ({
      target: endpointTarget(id),
      details: { changed: Object.keys(values), changes: values },
    }),
    idempotency,
  ).then(({ endpoint }) => endpoint);

const endpointSettings = ["url", "events", "products", "enabled", "description"] as const;

/** The settings that differ, old and new value; a URL by its origin (urlOrigin). */
function endpointChanges(
  before: WebhookEndpoint,
  after: WebhookEndpoint,
): Record<string, { from: unknown; to: unknown }> {
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const name of endpointSettings) {
    if (JSON.stringify(before[name]) === JSON.stringify(after[name])) continue;
    changes[name] =
      name === "url"
        ? { from: urlOrigin(before.url), to: urlOrigin(after.url) }
        : { from: before[name], to: after[name] };
  }
  return changes;
}

export const deleteWebhookEndpointAudited = (
  db: Kysely<DB>,
  actor: Actor,
  id: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "webhook_endpoint.delete",
    (trx) => deleteWebhookEndpoint(trx, id),
    () => ({ target: endpointTarget(id) }),
    idempotency,
  );

export const rotateWebhookSecretAudited = (
  db: Kysely<DB>,
  actor: Actor,
  masterKey: MasterKey,
  id: string,
  graceSeconds: number,
  now?: number,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "webhook_endpoint.rotate_secret",
    (trx) => rotateWebhookSecret(trx, masterKey, id, graceSeconds, now),
    (rotated) => ({
      target: endpointTarget(id),
      details: { previousSecretExpiresAt: rotated.previousSecretExpiresAt },
    }),
    idempotency,
  );

export const redeliverWebhookAudited = (
  db: Kysely<DB>,
  actor: Actor,
  id: string,
  eventId: string,
  now?: number,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "webhook_endpoint.redeliver",
    async (trx) =>
      redeliverWebhook(
        trx,
        id,
        eventId,
        { licensesRead: await actorHoldsScope(trx, actor, "licenses:read") },
        now,
      ),
    () => ({ target: endpointTarget(id), details: { eventId } }),
    idempotency,
  );

export const sendWebhookTestAudited = (
  db: Kysely<DB>,
  actor: Actor,
  id: string,
  now?: number,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "webhook_endpoint.test",
    (trx) => sendWebhookTest(trx, id, now),
    (delivery) => ({ target: endpointTarget(id), details: { eventId: delivery.eventId } }),
    idempotency,
  );
