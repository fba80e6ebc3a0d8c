import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import { ShipkeyError } from "../errors.js";
import * as apiKeys from "../domain/api-keys/api-keys.js";
import {
  assertMayCreateKey,
  assertMayRevokeKey,
  keyAuthorityOf,
} from "../domain/api-keys/key-authority.js";
import { type Actor, recordAudit, withAudit } from "../domain/audit/audit-log.js";
import type { IdempotencyClaim } from "../domain/idempotency/idempotency-keys.js";
import { emitWebhookEvent } from "../domain/webhooks/events.js";

// API keys: the use cases' actions. Each runs its checks, its rows, its webhook events and its
// audit entry in one transaction (withAudit), so the admin API, the dashboard and the CLI record
// the same entry whichever way a write was made. Details never hold a secret.

/** `products`: the slugs the key is limited to (each must exist); null or absent: every product. */
export const createApiKey = (
  db: Kysely<DB>,
  actor: Actor,
  input: { name: string; scopes: string[]; expiresAt?: number | null; products?: string[] | null },
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "api_key.create",
    async (trx) => {
      const { products, ...key } = input;
      const productIds =
        products === undefined || products === null
          ? null
          : await apiKeys.resolveKeyProducts(trx, products);
      // A key creating a key holds its own row first, so a revocation of it with the keys it
      // created either sees this one or comes first (and this key is refused, revoked).
      if (actor.type === "api_key" && actor.id !== null) {
        const [live] = await apiKeys.lockKeys(trx, [actor.id]);
        if (live === undefined) throw ShipkeyError.spec("INVALID_API_KEY");
      }
      // An API key grants at most its own scopes, for its own products, for no longer than its
      // own life.
      const authority = await keyAuthorityOf(trx, actor);
      if (authority) {
        assertMayCreateKey(authority, {
          ...key,
          productIds,
          productSlugs: products === undefined || products === null ? null : [...new Set(products)],
        });
      }
      // Who created it, as the audit log names them (a revocation with the keys it created
      // follows the keys an API key created).
      const createdBy = { type: actor.type, id: actor.id, label: actor.label };
      const created = await apiKeys.createApiKey(trx, { ...key, productIds, createdBy });
      // Never the secret.
      await emitWebhookEvent(trx, {
        type: "api_key.created",
        product: null,
        data: { apiKey: { ...created, key: undefined } },
      });
      return created;
    },
    // Never the secret: its name, scopes, products, id and display prefix only.
    (created) => ({
      target: { type: "api_key", id: created.id },
      details: {
        name: created.name,
        scopes: created.scopes,
        products: created.products,
        displayPrefix: created.displayPrefix,
      },
    }),
    idempotency,
  );

/**
 * Revokes a key (api_key.revoke). With `withCreated`, also every key below it that is still
 * active (keysBelow: the keys it created, those they created, ...), in the same transaction, each
 * with its own api_key.revoke entry (`revokedWith`: the key asked for) and api_key.revoked event;
 * the key's own entry lists them (`alsoRevoked`). An API key must be allowed to revoke each of
 * them (assertMayRevokeKey), else nothing is revoked.
 */
export const revokeApiKey = (
  db: Kysely<DB>,
  actor: Actor,
  id: string,
  options: { withCreated?: boolean } = {},
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "api_key.revoke",
    async (trx) => {
      const now = Date.now();
      const target = await apiKeys.requireApiKey(trx, id);
      const authority = await keyAuthorityOf(trx, actor);
      if (authority) {
        assertMayRevokeKey(authority, {
          scopes: target.scopes,
          productIds: await apiKeys.keyProductIds(trx, id),
        });
      }
      const below = options.withCreated
        ? (await apiKeys.keysBelow(trx, id, now, { lock: true })).filter((key) => key.active)
        : [];
      // A key creates keys within its own authority, so the keys below one the caller may
      // revoke are within the caller's too; one beyond it (changed by hand since) refuses the
      // whole revocation.
      if (authority) for (const key of below) assertMayRevokeKey(authority, key);
      const apiKey = await apiKeys.revokeApiKey(trx, id, now);
      await emitWebhookEvent(trx, { type: "api_key.revoked", product: null, data: { apiKey } });
      const alsoRevoked = await apiKeys.revokeApiKeys(
        trx,
        below.map((key) => key.id),
        now,
      );
      for (const key of alsoRevoked) {
        await emitWebhookEvent(trx, {
          type: "api_key.revoked",
          product: null,
          data: { apiKey: key },
        });
        await recordAudit(
          trx,
          actor,
          "api_key.revoke",
          { type: "api_key", id: key.id },
          { name: key.name, revokedWith: id },
          now,
        );
      }
      return { ...apiKey, alsoRevoked: alsoRevoked.map((key) => key.id) };
    },
    (key) => ({
      target: { type: "api_key", id: key.id },
      details: {
        name: key.name,
        ...(options.withCreated ? { alsoRevoked: key.alsoRevoked } : {}),
      },
    }),
    idempotency,
  );
