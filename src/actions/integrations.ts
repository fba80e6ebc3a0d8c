import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import type { IdempotencyClaim } from "../domain/idempotency/idempotency-keys.js";
import { type Actor, withAudit } from "../domain/audit/audit-log.js";
import type { MasterKey } from "../domain/signing/key-material.js";
import {
  addIntegrationSecret,
  createIntegration,
  deleteIntegration,
  type NewIntegration,
  removeIntegrationSecret,
  requireIntegrationRow,
  updateIntegration,
} from "../domain/integrations/integrations.js";
import { removePriceMapping, setPriceMapping } from "../domain/integrations/prices.js";
import type { IntegrationMode, QuantityMeaning } from "../contracts/vocabulary.js";

// Payment integrations and their secrets: the use cases' actions. Each runs its checks, its
// rows and its audit entry in one transaction (withAudit), whichever front end made the change.
// Details never hold a secret, only the secret's id.

const target = (id: string) => ({ type: "integration", id });

export const connectPaymentProvider = (
  db: Kysely<DB>,
  actor: Actor,
  masterKey: MasterKey,
  input: NewIntegration,
  origin: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "integration.create",
    (trx) => createIntegration(trx, masterKey, input, origin),
    (created) => ({
      target: target(created.id),
      details: {
        product: created.product,
        provider: created.provider,
        mode: created.mode,
        secretId: created.secrets[0]?.id ?? null,
      },
    }),
    idempotency,
  );

export const changeIntegration = (
  db: Kysely<DB>,
  actor: Actor,
  id: string,
  changes: { mode?: IntegrationMode; description?: string | null },
  origin: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "integration.update",
    async (trx) => {
      const before = await requireIntegrationRow(trx, id);
      const after = await updateIntegration(trx, id, changes, origin);
      const changed: Record<string, { from: unknown; to: unknown }> = {};
      if (before.mode !== after.mode) changed.mode = { from: before.mode, to: after.mode };
      if (before.description !== after.description) {
        changed.description = { from: before.description, to: after.description };
      }
      return { after, changed };
    },
    ({ changed }) => ({
      target: target(id),
      details: { changed: Object.keys(changed), changes: changed },
    }),
    idempotency,
  ).then(({ after }) => after);

export const disconnectPaymentProvider = (
  db: Kysely<DB>,
  actor: Actor,
  id: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "integration.delete",
    async (trx) => {
      const row = await requireIntegrationRow(trx, id);
      await deleteIntegration(trx, id);
      return row;
    },
    (row) => ({
      target: target(id),
      details: { product: row.product_slug, provider: row.provider },
    }),
    idempotency,
  );

/** The first half of a rotation: the new secret, beside the old one. */
export const addSigningSecret = (
  db: Kysely<DB>,
  actor: Actor,
  masterKey: MasterKey,
  id: string,
  secret: string,
  origin: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "integration.add_secret",
    (trx) => addIntegrationSecret(trx, masterKey, id, secret, origin),
    ({ secretId }) => ({ target: target(id), details: { secretId } }),
    idempotency,
  ).then(({ integration }) => integration);

/** The second half of a rotation: the old secret removed. */
export const removeSigningSecret = (
  db: Kysely<DB>,
  actor: Actor,
  id: string,
  secretId: string,
  origin: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "integration.remove_secret",
    (trx) => removeIntegrationSecret(trx, id, secretId, origin),
    () => ({ target: target(id), details: { secretId } }),
    idempotency,
  );

/** A provider's price sells a plan; replaying an event ignored for want of it then fulfils it. */
export const mapPriceToPlan = (
  db: Kysely<DB>,
  actor: Actor,
  id: string,
  input: { priceId: string; planId: string; quantityMeans: QuantityMeaning },
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "integration.map_price",
    (trx) => setPriceMapping(trx, id, input),
    (mapping) => ({ target: target(id), details: { ...mapping, createdAt: undefined } }),
    idempotency,
  );

export const unmapPrice = (
  db: Kysely<DB>,
  actor: Actor,
  id: string,
  priceId: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "integration.unmap_price",
    (trx) => removePriceMapping(trx, id, priceId),
    () => ({ target: target(id), details: { priceId } }),
    idempotency,
  );
