import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import { actorHoldsScope } from "../domain/api-keys/key-authority.js";
import type { MasterKey } from "../domain/signing/key-material.js";
import { type Actor, withAudit } from "../domain/audit/audit-log.js";
import type { IdempotencyClaim } from "../domain/idempotency/idempotency-keys.js";
import * as endpoints from "../domain/webhooks/endpoints.js";
import * as deliveries from "../domain/webhooks/deliveries.js";
import type { WebhookEndpoint } from "../contracts/webhooks.js";

// Webhook endpoints, their secrets and deliveries: the use cases' actions.
// Each runs its checks, its rows, its webhook events and its audit entry in one transaction
// (withAudit), so the admin API, the dashboard and the CLI record the same entry whichever way a
// write was made. Details never hold a secret.

const endpointTarget = (id: string) => ({ type: "webhook_endpoint", id });

/** Never the secret: the URL's origin (urlOrigin: never its path or query), events and products. */
export const createWebhookEndpoint = (
  db: Kysely<DB>,
  actor: Actor,
  masterKey: MasterKey,
  input: endpoints.EndpointSettings & { url: string; events: string[] },
  policy: endpoints.UrlPolicy,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "webhook_endpoint.create",
    async (trx) =>
      endpoints.createWebhookEndpoint(
        trx,
        masterKey,
        input,
        policy,
        await actorHoldsScope(trx, actor, "licenses:read"),
      ),
    (created) => ({
      target: endpointTarget(created.id),
      details: {
        url: endpoints.urlOrigin(created.url),
        events: created.events,
        products: created.products,
      },
    }),
    idempotency,
  );

export const updateWebhookEndpoint = (
  db: Kysely<DB>,
  actor: Actor,
  id: string,
  changes: endpoints.EndpointSettings,
  policy: endpoints.UrlPolicy,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "webhook_endpoint.update",
    async (trx) => {
      // Read without failing first: the domain's update checks the settings before the id.
      const row = await trx
        .selectFrom("webhook_endpoints")
        .selectAll()
        .where("id", "=", id)
        .executeTakeFirst();
      const now = Date.now();
      const before = row && endpoints.toEndpointView(row, now);
      const licenseData = await actorHoldsScope(trx, actor, "licenses:read");
      const endpoint = await endpoints.updateWebhookEndpoint(trx, id, changes, policy, licenseData);
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
        ? { from: endpoints.urlOrigin(before.url), to: endpoints.urlOrigin(after.url) }
        : { from: before[name], to: after[name] };
  }
  return changes;
}

export const deleteWebhookEndpoint = (
  db: Kysely<DB>,
  actor: Actor,
  id: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "webhook_endpoint.delete",
    (trx) => endpoints.deleteWebhookEndpoint(trx, id),
    () => ({ target: endpointTarget(id) }),
    idempotency,
  );

export const rotateWebhookSecret = (
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
    (trx) => endpoints.rotateWebhookSecret(trx, masterKey, id, graceSeconds, now),
    (rotated) => ({
      target: endpointTarget(id),
      details: { previousSecretExpiresAt: rotated.previousSecretExpiresAt },
    }),
    idempotency,
  );

export const redeliverWebhook = (
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
      deliveries.redeliverWebhook(
        trx,
        id,
        eventId,
        { licensesRead: await actorHoldsScope(trx, actor, "licenses:read") },
        now,
      ),
    () => ({ target: endpointTarget(id), details: { eventId } }),
    idempotency,
  );

export const sendWebhookTest = (
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
    (trx) => deliveries.sendWebhookTest(trx, id, now),
    (delivery) => ({ target: endpointTarget(id), details: { eventId: delivery.eventId } }),
    idempotency,
  );
