import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import { inTransaction } from "../db/transaction.js";
import {
  createProduct,
  deleteProduct,
  renameProduct,
  requireProduct,
  setDeactivationLimit,
  setMachineLease,
  setOfflineAllowance,
  setOfflinePeriod,
  setTauriPublicKey,
  setUpdateDelivery,
  type UpdateDelivery,
} from "../domain/products/products.js";
import type { MasterKey } from "../domain/signing/key-material.js";
import {
  ensureSigningKey,
  removeSigningKey,
  prepareSigningKey,
  promoteSigningKey,
  resealSigningKeys,
} from "../domain/signing/signing-keys.js";
import { type Actor, withAudit } from "../domain/audit/audit-log.js";
import { resealWebhookSecrets } from "../domain/webhooks/endpoints.js";
import { resealIntegrationSecrets } from "../domain/integrations/integrations.js";

// Products, their settings and signing keys, and the master key's rotation: the use cases' actions. Each runs its checks, its rows, its webhook events and its
// audit entry in one transaction (withAudit), so the admin API, the dashboard and the CLI record
// the same entry whichever way a write was made. Details never hold a secret.

const productEntry = (product: { slug: string; name: string }) => ({
  target: { type: "product", id: product.slug },
  details: { name: product.name },
});

/**
 * A new product with its signing key, in one transaction. Without the master key at hand (the
 * CLI on PostgreSQL without SHIPKEY_MASTER_KEY) the service makes the key at its first use.
 */
export const createProductAudited = (
  db: Kysely<DB>,
  actor: Actor,
  input: { slug: string; name: string },
  masterKey: MasterKey | null,
) =>
  withAudit(
    db,
    actor,
    "product.create",
    async (trx) => {
      const product = await createProduct(trx, input);
      if (masterKey) await ensureSigningKey(trx, masterKey, product.id);
      return product;
    },
    productEntry,
  );

export const setOfflinePeriodAudited = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  seconds: number,
) =>
  withAudit(
    db,
    actor,
    "product.offline_period",
    (trx) => setOfflinePeriod(trx, slug, seconds),
    (product) => ({
      target: { type: "product", id: product.slug },
      details: { offlinePeriodSeconds: product.offlinePeriodSeconds },
    }),
  );

export const setOfflineAllowanceAudited = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  machines: number,
) =>
  withAudit(
    db,
    actor,
    "product.offline_allowance",
    (trx) => setOfflineAllowance(trx, slug, machines),
    (product) => ({
      target: { type: "product", id: product.slug },
      details: { offlineAllowance: product.offlineAllowance },
    }),
  );

/** The product's churn limit (null: none). */
export const setDeactivationLimitAudited = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  perThirtyDays: number | null,
) =>
  withAudit(
    db,
    actor,
    "product.deactivation_limit",
    (trx) => setDeactivationLimit(trx, slug, perThirtyDays),
    (product) => ({
      target: { type: "product", id: product.slug },
      details: { maxDeactivationsPer30Days: product.maxDeactivationsPer30Days },
    }),
  );

/** The product's machine lease in days (null: off). */
export const setMachineLeaseAudited = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  days: number | null,
) =>
  withAudit(
    db,
    actor,
    "product.machine_lease",
    (trx) => setMachineLease(trx, slug, days),
    (product) => ({
      target: { type: "product", id: product.slug },
      details: { machineLeaseDays: product.machineLeaseDays },
    }),
  );

/** A next signing key, endorsed by the current one; it signs nothing until promoted. */
export const prepareSigningKeyAudited = (
  db: Kysely<DB>,
  actor: Actor,
  masterKey: MasterKey,
  slug: string,
) =>
  withAudit(
    db,
    actor,
    "product.key_prepare",
    (trx) => prepareSigningKey(trx, masterKey, slug),
    (prepared) => ({ target: { type: "product", id: slug }, details: prepared }),
  );

/** The next key becomes current, the current one retired (still published). */
export const promoteSigningKeyAudited = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  options: { force?: boolean },
) =>
  withAudit(
    db,
    actor,
    "product.key_promote",
    (trx) => promoteSigningKey(trx, slug, options),
    (promotion) => ({ target: { type: "product", id: slug }, details: promotion }),
  );

/** Every signing key sealed again under a new master key; the audit names how many. */
export const rotateMasterKeyAudited = (
  db: Kysely<DB>,
  actor: Actor,
  from: MasterKey,
  to: MasterKey,
) =>
  withAudit(
    db,
    actor,
    "master_key.rotate",
    async (trx) => ({
      ...(await resealSigningKeys(trx, from, to)),
      webhookSecrets: await resealWebhookSecrets(trx, from, to),
      integrationSecrets: await resealIntegrationSecrets(trx, from, to),
    }),
    (result) => ({ target: { type: "master_key", id: "signing_keys" }, details: result }),
  );

export const removeSigningKeyAudited = (db: Kysely<DB>, actor: Actor, slug: string, kid: string) =>
  withAudit(
    db,
    actor,
    "product.key_remove",
    (trx) => removeSigningKey(trx, slug, kid),
    () => ({ target: { type: "product", id: slug }, details: { kid } }),
  );

export const renameProductAudited = (db: Kysely<DB>, actor: Actor, slug: string, name: string) =>
  withAudit(db, actor, "product.rename", (trx) => renameProduct(trx, slug, name), productEntry);

export const setUpdateDeliveryAudited = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  settings: UpdateDelivery,
) =>
  withAudit(
    db,
    actor,
    "product.update_delivery",
    (trx) => setUpdateDelivery(trx, slug, settings),
    (product) => ({
      target: { type: "product", id: product.slug },
      details: {
        updatesRequireLicense: product.updatesRequireLicense,
        downloadRedirects: product.downloadRedirects,
      },
    }),
  );

/** Sets (product.tauri_key_set) or clears (product.tauri_key_clear) the product's Tauri key. */
export const setTauriPublicKeyAudited = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  tauriPublicKey: string | null,
) =>
  withAudit(
    db,
    actor,
    tauriPublicKey === null ? "product.tauri_key_clear" : "product.tauri_key_set",
    (trx) => setTauriPublicKey(trx, slug, tauriPublicKey),
    (product) => ({
      target: { type: "product", id: product.slug },
      details: { tauriKeyId: product.tauriKeyId },
    }),
  );

/**
 * The given settings of a product (the admin API's PATCH, the CLI's products update), each
 * audited as its own action, all in one transaction: every change or none.
 */
export const updateProductAudited = (
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
  } & UpdateDelivery,
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
      await setOfflinePeriodAudited(trx, actor, slug, offlinePeriodSeconds);
    }
    if (offlineAllowance !== undefined) {
      await setOfflineAllowanceAudited(trx, actor, slug, offlineAllowance);
    }
    if (maxDeactivationsPer30Days !== undefined) {
      await setDeactivationLimitAudited(trx, actor, slug, maxDeactivationsPer30Days);
    }
    if (machineLeaseDays !== undefined) {
      await setMachineLeaseAudited(trx, actor, slug, machineLeaseDays);
    }
    if (tauriPublicKey !== undefined) {
      await setTauriPublicKeyAudited(trx, actor, slug, tauriPublicKey);
    }
    if (delivery.updatesRequireLicense !== undefined || delivery.downloadRedirects !== undefined) {
      await setUpdateDeliveryAudited(trx, actor, slug, delivery);
    }
    if (name !== undefined) await renameProductAudited(trx, actor, slug, name);
    return requireProduct(trx, slug);
  });

export const deleteProductAudited = (db: Kysely<DB>, actor: Actor, slug: string) =>
  withAudit(
    db,
    actor,
    "product.delete",
    (trx) => deleteProduct(trx, slug),
    () => ({ target: { type: "product", id: slug } }),
  );
