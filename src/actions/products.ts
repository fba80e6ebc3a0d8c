import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import { inTransaction } from "../db/transaction.js";
import * as products from "../domain/products/products.js";
import type { MasterKey } from "../domain/signing/key-material.js";
import * as signingKeys from "../domain/signing/signing-keys.js";
import { type Actor, withAudit } from "../domain/audit/audit-log.js";
import type { IdempotencyClaim } from "../domain/idempotency/idempotency-keys.js";
import { resealWebhookSecrets } from "../domain/webhooks/endpoints.js";
import { resealIntegrationSecrets } from "../domain/integrations/integrations.js";

// Products, their settings and signing keys, and the master key's rotation: the use cases'
// actions. Each runs its checks, its rows, its webhook events and its audit entry in one
// transaction (withAudit), so the admin API, the dashboard and the CLI record the same entry
// whichever way a write was made. Details never hold a secret.

const productEntry = (product: { slug: string; name: string }) => ({
  target: { type: "product", id: product.slug },
  details: { name: product.name },
});

/**
 * A new product with its signing key, in one transaction. Without the master key at hand (the
 * CLI on PostgreSQL without SHIPKEY_MASTER_KEY) the service makes the key at its first use.
 */
export const createProduct = (
  db: Kysely<DB>,
  actor: Actor,
  input: { slug: string; name: string },
  masterKey: MasterKey | null,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "product.create",
    async (trx) => {
      const product = await products.createProduct(trx, input);
      if (masterKey) await signingKeys.ensureSigningKey(trx, masterKey, product.id);
      return product;
    },
    productEntry,
    idempotency,
  );

export const setOfflinePeriod = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  seconds: number,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "product.offline_period",
    (trx) => products.setOfflinePeriod(trx, slug, seconds),
    (product) => ({
      target: { type: "product", id: product.slug },
      details: { offlinePeriodSeconds: product.offlinePeriodSeconds },
    }),
    idempotency,
  );

export const setOfflineAllowance = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  machines: number,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "product.offline_allowance",
    (trx) => products.setOfflineAllowance(trx, slug, machines),
    (product) => ({
      target: { type: "product", id: product.slug },
      details: { offlineAllowance: product.offlineAllowance },
    }),
    idempotency,
  );

/** The product's churn limit (null: none). */
export const setDeactivationLimit = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  perThirtyDays: number | null,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "product.deactivation_limit",
    (trx) => products.setDeactivationLimit(trx, slug, perThirtyDays),
    (product) => ({
      target: { type: "product", id: product.slug },
      details: { maxDeactivationsPer30Days: product.maxDeactivationsPer30Days },
    }),
    idempotency,
  );

/** The product's machine lease in days (null: off). */
export const setMachineLease = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  days: number | null,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "product.machine_lease",
    (trx) => products.setMachineLease(trx, slug, days),
    (product) => ({
      target: { type: "product", id: product.slug },
      details: { machineLeaseDays: product.machineLeaseDays },
    }),
    idempotency,
  );

/** A next signing key, endorsed by the current one; it signs nothing until promoted. */
export const prepareSigningKey = (
  db: Kysely<DB>,
  actor: Actor,
  masterKey: MasterKey,
  slug: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "product.key_prepare",
    (trx) => signingKeys.prepareSigningKey(trx, masterKey, slug),
    (prepared) => ({ target: { type: "product", id: slug }, details: prepared }),
    idempotency,
  );

/** The next key becomes current, the current one retired (still published). */
export const promoteSigningKey = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  options: { force?: boolean },
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "product.key_promote",
    (trx) => signingKeys.promoteSigningKey(trx, slug, options),
    (promotion) => ({ target: { type: "product", id: slug }, details: promotion }),
    idempotency,
  );

/** Every signing key sealed again under a new master key; the audit names how many. */
export const resealSecrets = (db: Kysely<DB>, actor: Actor, from: MasterKey, to: MasterKey) =>
  withAudit(
    db,
    actor,
    "master_key.rotate",
    async (trx) => ({
      ...(await signingKeys.resealSigningKeys(trx, from, to)),
      webhookSecrets: await resealWebhookSecrets(trx, from, to),
      integrationSecrets: await resealIntegrationSecrets(trx, from, to),
    }),
    (result) => ({ target: { type: "master_key", id: "signing_keys" }, details: result }),
  );

export const removeSigningKey = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  kid: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "product.key_remove",
    (trx) => signingKeys.removeSigningKey(trx, slug, kid),
    () => ({ target: { type: "product", id: slug }, details: { kid } }),
    idempotency,
  );

export const renameProduct = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  name: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "product.rename",
    (trx) => products.renameProduct(trx, slug, name),
    productEntry,
    idempotency,
  );

export const setUpdateDelivery = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  settings: products.UpdateDelivery,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "product.update_delivery",
    (trx) => products.setUpdateDelivery(trx, slug, settings),
    (product) => ({
      target: { type: "product", id: product.slug },
      details: {
        updatesRequireLicense: product.updatesRequireLicense,
        downloadRedirects: product.downloadRedirects,
      },
    }),
    idempotency,
  );

/** Sets (product.tauri_key_set) or clears (product.tauri_key_clear) the product's Tauri key. */
export const setTauriPublicKey = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  tauriPublicKey: string | null,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    tauriPublicKey === null ? "product.tauri_key_clear" : "product.tauri_key_set",
    (trx) => products.setTauriPublicKey(trx, slug, tauriPublicKey),
    (product) => ({
      target: { type: "product", id: product.slug },
      details: { tauriKeyId: product.tauriKeyId },
    }),
    idempotency,
  );

/**
 * The given settings of a product (the admin API's PATCH, the CLI's products update), each
 * audited as its own action, all in one transaction: every change or none.
 */
export const updateProduct = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  changes: {
    name?: string;
    tauriPublicKey?: string | null;
    offlinePeriodSeconds?: number;
    offlineAllowance?: number;
    maxDeactivationsPer30Days?: number | null;
    machineLeaseDays?: number | null;
  } & products.UpdateDelivery,
  idempotency?: IdempotencyClaim | null,
) =>
  inTransaction(db, async (trx) => {
    const {
      name,
      tauriPublicKey,
      offlinePeriodSeconds,
      offlineAllowance,
      maxDeactivationsPer30Days,
      machineLeaseDays,
      ...delivery
    } = changes;
    if (offlinePeriodSeconds !== undefined) {
      await setOfflinePeriod(trx, actor, slug, offlinePeriodSeconds, idempotency);
    }
    if (offlineAllowance !== undefined) {
      await setOfflineAllowance(trx, actor, slug, offlineAllowance, idempotency);
    }
    if (maxDeactivationsPer30Days !== undefined) {
      await setDeactivationLimit(trx, actor, slug, maxDeactivationsPer30Days, idempotency);
    }
    if (machineLeaseDays !== undefined) {
      await setMachineLease(trx, actor, slug, machineLeaseDays, idempotency);
    }
    if (tauriPublicKey !== undefined) {
      await setTauriPublicKey(trx, actor, slug, tauriPublicKey, idempotency);
    }
    if (delivery.updatesRequireLicense !== undefined || delivery.downloadRedirects !== undefined) {
      await setUpdateDelivery(trx, actor, slug, delivery, idempotency);
    }
    if (name !== undefined) await renameProduct(trx, actor, slug, name, idempotency);
    return products.requireProduct(trx, slug);
  });

export const deleteProduct = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "product.delete",
    (trx) => products.deleteProduct(trx, slug),
    () => ({ target: { type: "product", id: slug } }),
    idempotency,
  );
