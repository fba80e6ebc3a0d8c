import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import {
  insertAdmin,
  prepareAdmin,
  preparePassword,
  removeAdmin,
  setAdminPassword,
} from "../admins/admins.js";
import {
  createApiKey,
  keyProductIds,
  keysBelow,
  lockKeys,
  requireApiKey,
  resolveKeyProducts,
  revokeApiKey,
  revokeApiKeys,
} from "../api-keys/api-keys.js";
import {
  actorHoldsScope,
  assertMayCreateKey,
  assertMayRevokeKey,
  keyAuthorityOf,
} from "../api-keys/key-authority.js";
import { deactivateMachine } from "../licenses/deactivate-machine.js";
import { licenseIdOfKey } from "../licenses/license-record.js";
import { endOfflinePlace } from "../licenses/offline-places.js";
import { maskLicenseKey } from "../licenses/license-key.js";
import { deleteLicense, moveLicense, resetMachines } from "../licenses/seats.js";
import {
  changedSettings,
  type CreateLicenseInput,
  createLicense,
  findLicenseView,
  type LicenseSettings,
  settingChanges,
  updateLicense,
} from "../licenses/manage-licenses.js";
import { inTransaction } from "../../db/transaction.js";
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
} from "../products/products.js";
import type { MasterKey } from "../signing/key-material.js";
import {
  ensureSigningKey,
  removeSigningKey,
  prepareSigningKey,
  promoteSigningKey,
  resealSigningKeys,
} from "../signing/signing-keys.js";
import { deleteRelease, setReleaseYanked } from "../releases/manage-releases.js";
import {
  applyPublishRollout,
  type CheckedPublish,
  writeRelease,
} from "../releases/publish-release.js";
import { renderReleaseNotes } from "../releases/release-notes.js";
import {
  changeRollout,
  type RolloutChange,
  type RolloutPlan,
  readRollout,
  setCritical,
  setRollout,
} from "../releases/rollout.js";
import { emitRolloutEvents } from "../releases/rollout-events.js";
import { checkTauriSignatures } from "../releases/tauri-signatures.js";
import type { Product } from "../products/products.js";
import { type Actor, recordAudit, withAudit } from "./audit-log.js";
import { emitWebhookEvent } from "../webhooks/events.js";
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  type EndpointSettings,
  resealWebhookSecrets,
  rotateWebhookSecret,
  toEndpointView,
  updateWebhookEndpoint,
  urlOrigin,
  type UrlPolicy,
} from "../webhooks/endpoints.js";
import { redeliverWebhook, sendWebhookTest } from "../webhooks/deliveries.js";
import type { License, ReleaseRollout } from "../../contracts/admin.js";
import type { PublishAnswer } from "../../contracts/releases.js";
import type { WebhookEndpoint } from "../../contracts/webhooks.js";
import { type Arch, type LicenseStatus, type Platform } from "../../contracts/vocabulary.js";

/**
 * Every audited admin write, once: the admin API, the dashboard and the CLI all call these, so an
 * action records the same audit entry (name, target, details) whichever way it was made. Each write and
 * its entry commit together (withAudit). Details never hold a secret.
 */

/**
 * How the audit log names a license: by its internal id, with the key masked (maskLicenseKey).
 * The log never holds a license key (a key that reads the log could use it).
 */
async function licenseTarget(trx: Kysely<DB>, licenseKey: string) {
  const row = await trx
    .selectFrom("licenses")
    .select("id")
    .where("license_key", "=", licenseKey)
    .executeTakeFirst();
  return {
    target: { type: "license", id: row?.id ?? maskLicenseKey(licenseKey) },
    licenseKey: maskLicenseKey(licenseKey),
  };
}

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

export const createLicenseAudited = (db: Kysely<DB>, actor: Actor, input: CreateLicenseInput) =>
  withAudit(
    db,
    actor,
    "license.create",
    async (trx) => {
      const license = await createLicense(trx, input);
      await emitLicenseEvent(trx, "license.created", license);
      return { license, named: await licenseTarget(trx, license.licenseKey) };
    },
    ({ license, named }) => ({
      target: named.target,
      details: {
        licenseKey: named.licenseKey,
        product: license.product,
        maxMachines: license.maxMachines,
        status: license.status,
        ...(license.maxDeactivationsPer30Days === null
          ? {}
          : { maxDeactivationsPer30Days: license.maxDeactivationsPer30Days }),
      },
    }),
  ).then(({ license }) => license);

export const updateLicenseAudited = (
  db: Kysely<DB>,
  actor: Actor,
  licenseKey: string,
  changes: LicenseSettings,
) =>
  withAudit(
    db,
    actor,
    "license.update",
    async (trx) => {
      // Read without failing first: updateLicense checks the settings before the key, and so
      // must this (a bad setting on an unknown key is a 400, not a 404).
      const before = await findLicenseView(trx, licenseKey);
      const license = await updateLicense(trx, licenseKey, changes);
      const named = await licenseTarget(trx, license.licenseKey);
      const changed = before ? changedSettings(before, license) : [];
      if (changed.length > 0) await emitLicenseEvent(trx, "license.updated", license, { changed });
      if (before && before.status !== license.status) {
        await emitLicenseEvent(trx, `license.${statusEvents[license.status]}`, license);
      }
      const values = before ? settingChanges(before, license) : {};
      return { license, named, changed, values };
    },
    // What actually changed, not what was sent: the dashboard's form sends every field. Each
    // changed setting with its old and new value (`changes`), read in the write's transaction.
    ({ named, changed, values }) => ({
      target: named.target,
      details: { licenseKey: named.licenseKey, changed, changes: values },
    }),
  ).then(({ license }) => license);

const statusActions = { ACTIVE: "reinstate", SUSPENDED: "suspend", REVOKED: "revoke" } as const;
const statusEvents = { ACTIVE: "reinstated", SUSPENDED: "suspended", REVOKED: "revoked" } as const;

/** A license event: the license as the admin API shows it (and what changed, for updated). */
const emitLicenseEvent = (
  trx: Kysely<DB>,
  type: `license.${"created" | "updated" | (typeof statusEvents)[LicenseStatus]}`,
  license: License,
  extra: Record<string, unknown> = {},
) => emitWebhookEvent(trx, { type, product: license.product, data: { license, ...extra } });

/** Suspend, revoke or reinstate: audited as license.suspend / license.revoke / license.reinstate. */
export const setLicenseStatusAudited = (
  db: Kysely<DB>,
  actor: Actor,
  licenseKey: string,
  status: LicenseStatus,
) =>
  withAudit(
    db,
    actor,
    `license.${statusActions[status]}`,
    async (trx) => {
      const before = await findLicenseView(trx, licenseKey);
      const license = await updateLicense(trx, licenseKey, { status });
      if (before?.status !== license.status) {
        await emitLicenseEvent(trx, `license.${statusEvents[status]}`, license);
      }
      const changes = before ? settingChanges(before, license) : {};
      return { license, changes, named: await licenseTarget(trx, license.licenseKey) };
    },
    // The status's old and new value when it changed (a suspend of a suspended license: none).
    ({ named, changes }) => ({
      target: named.target,
      details: { licenseKey: named.licenseKey, changes },
    }),
  ).then(({ license }) => license);

export const deactivateMachineAudited = (
  db: Kysely<DB>,
  actor: Actor,
  licenseKey: string,
  machineId: string,
) =>
  withAudit(
    db,
    actor,
    "machine.deactivate",
    // An administrator is never held by the churn limit, and does not spend it.
    async (trx) => {
      const result = await deactivateMachine(trx, { licenseKey, machineId }, { by: "admin" });
      return { result, named: await licenseTarget(trx, licenseKey) };
    },
    ({ named }) => ({
      target: named.target,
      details: { licenseKey: named.licenseKey, machineId },
    }),
  ).then(({ result }) => result);

/**
 * A deactivated machine's offline place ended before its certificate expires
 * (license.end_offline_place): the license counts it no longer.
 */
export const endOfflinePlaceAudited = (
  db: Kysely<DB>,
  actor: Actor,
  licenseKey: string,
  machineId: string,
  now = Date.now(),
) =>
  withAudit(
    db,
    actor,
    "license.end_offline_place",
    async (trx) => {
      const licenseId = await licenseIdOfKey(trx, licenseKey);
      const result = await endOfflinePlace(trx, licenseId, machineId, now);
      return { result, named: await licenseTarget(trx, licenseKey) };
    },
    ({ result, named }) => ({
      target: named.target,
      details: { licenseKey: named.licenseKey, machineId, certificateExpiresAt: result.endsAt },
    }),
  ).then(({ result }) => result);

/** Every machine of the license deactivated in one action (license.reset_machines). */
export const resetMachinesAudited = (db: Kysely<DB>, actor: Actor, licenseKey: string) =>
  withAudit(
    db,
    actor,
    "license.reset_machines",
    async (trx) => {
      const result = await resetMachines(trx, licenseKey);
      return { result, named: await licenseTarget(trx, licenseKey) };
    },
    ({ result, named }) => ({
      target: named.target,
      details: { licenseKey: named.licenseKey, machineIds: result.machineIds },
    }),
  ).then(({ result }) => result);

/** The license moved to another product (license.move), with its license.updated event. */
export const moveLicenseAudited = (
  db: Kysely<DB>,
  actor: Actor,
  licenseKey: string,
  productSlug: string,
) =>
  withAudit(
    db,
    actor,
    "license.move",
    async (trx) => {
      const { before, license } = await moveLicense(trx, licenseKey, productSlug);
      if (before !== license.product) {
        await emitLicenseEvent(trx, "license.updated", license, { changed: ["product"] });
      }
      return { before, license, named: await licenseTarget(trx, licenseKey) };
    },
    ({ before, license, named }) => ({
      target: named.target,
      details: {
        licenseKey: named.licenseKey,
        from: before,
        to: license.product,
        changes:
          before === license.product ? {} : { product: { from: before, to: license.product } },
      },
    }),
  ).then(({ license }) => license);

/** The license deleted (license.delete); refused while a machine holds a slot. */
export const deleteLicenseAudited = (db: Kysely<DB>, actor: Actor, licenseKey: string) =>
  withAudit(
    db,
    actor,
    "license.delete",
    async (trx) => {
      const named = await licenseTarget(trx, licenseKey);
      const license = await deleteLicense(trx, licenseKey);
      return { license, named };
    },
    ({ license, named }) => ({
      target: named.target,
      details: { licenseKey: named.licenseKey, product: license.product },
    }),
  ).then(({ license }) => license);

/** `products`: the slugs the key is limited to (each must exist); null or absent: every product. */
export const createApiKeyAudited = (
  db: Kysely<DB>,
  actor: Actor,
  input: { name: string; scopes: string[]; expiresAt?: number | null; products?: string[] | null },
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
          : await resolveKeyProducts(trx, products);
      // A key creating a key holds its own row first, so a revocation of it with the keys it
      // created either sees this one or comes first (and this key is refused, revoked).
      if (actor.type === "api_key" && actor.id !== null) {
        const [live] = await lockKeys(trx, [actor.id]);
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
      const created = await createApiKey(trx, { ...key, productIds, createdBy });
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
  );

/**
 * Revokes a key (api_key.revoke). With `withCreated`, also every key below it that is still
 * active (keysBelow: the keys it created, those they created, ...), in the same transaction, each
 * with its own api_key.revoke entry (`revokedWith`: the key asked for) and api_key.revoked event;
 * the key's own entry lists them (`alsoRevoked`). An API key must be allowed to revoke each of
 * them (assertMayRevokeKey), else nothing is revoked.
 */
export const revokeApiKeyAudited = (
  db: Kysely<DB>,
  actor: Actor,
  id: string,
  options: { withCreated?: boolean } = {},
  now = Date.now(),
) =>
  withAudit(
    db,
    actor,
    "api_key.revoke",
    async (trx) => {
      const target = await requireApiKey(trx, id);
      const authority = await keyAuthorityOf(trx, actor);
      if (authority) {
        assertMayRevokeKey(authority, {
          scopes: target.scopes,
          productIds: await keyProductIds(trx, id),
        });
      }
      const below = options.withCreated
        ? (await keysBelow(trx, id, now, { lock: true })).filter((key) => key.active)
        : [];
      // A key creates keys within its own authority, so the keys below one the caller may
      // revoke are within the caller's too; one beyond it (changed by hand since) refuses the
      // whole revocation.
      if (authority) for (const key of below) assertMayRevokeKey(authority, key);
      const apiKey = await revokeApiKey(trx, id, now);
      await emitWebhookEvent(trx, { type: "api_key.revoked", product: null, data: { apiKey } });
      const alsoRevoked = await revokeApiKeys(
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
  );

/** A whole version (release.delete), or one platform/arch entry of it (release.delete_entry). */
export const deleteReleaseAudited = (
  db: Kysely<DB>,
  actor: Actor,
  productSlug: string,
  version: string,
  entry?: { platform: Platform; arch: Arch },
) =>
  withAudit(
    db,
    actor,
    entry ? "release.delete_entry" : "release.delete",
    (trx) => deleteRelease(trx, productSlug, version, entry),
    () => ({
      target: { type: "release", id: `${productSlug}@${version}` },
      ...(entry ? { details: { platform: entry.platform, arch: entry.arch } } : {}),
    }),
  );

/**
 * A publish (release.publish): the version and every entry, and the entry naming the product,
 * version, channel and each entry created or replaced, in one transaction. Who published is the
 * actor (the API key's id and name). The Tauri signatures are checked first, outside the
 * transaction, so no write lock is held while they are verified.
 */
export const publishReleaseAudited = async (
  db: Kysely<DB>,
  actor: Actor,
  product: Product,
  request: CheckedPublish,
) => {
  checkTauriSignatures(product.tauriPublicKey, request.entries);
  // Rendered before the transaction, which it never holds for the renderer's deadline.
  const notesHtml = await renderReleaseNotes(request.releaseNotes);
  return withAudit(
    db,
    actor,
    "release.publish",
    async (trx) => {
      const written = await writeRelease(trx, product, request, notesHtml);
      const change = await applyPublishRollout(trx, product.slug, request);
      if (change !== null) await emitRolloutEvents(trx, change.before, change.after);
      const state = change?.after;
      const result: PublishAnswer =
        state === undefined
          ? written
          : { ...written, critical: state.critical, rollout: state.rollout };
      await emitWebhookEvent(trx, {
        type: "release.published",
        product: product.slug,
        data: {
          product: product.slug,
          version: request.version,
          channel: result.channel,
          releaseNotes: request.releaseNotes,
          entries: request.entries.map((entry, i) => ({
            platform: entry.platform,
            arch: entry.arch,
            downloadUrl: entry.downloadUrl,
            status: result.releases[i]?.status ?? "created",
          })),
        },
      });
      return result;
    },
    (result) => ({
      target: { type: "release", id: `${product.slug}@${request.version}` },
      details: {
        product: product.slug,
        version: request.version,
        channel: result.channel,
        created: result.releases
          .filter((entry) => entry.status === "created")
          .map((entry) => `${entry.platform}/${entry.arch}`),
        replaced: result.releases
          .filter((entry) => entry.status === "updated")
          .map((entry) => `${entry.platform}/${entry.arch}`),
        ...(request.rollout ? { rollout: request.rollout } : {}),
        ...(typeof request.critical === "boolean" ? { critical: request.critical } : {}),
      },
    }),
  );
};

const releaseTarget = (productSlug: string, version: string) => ({
  type: "release",
  id: `${productSlug}@${version}`,
});

/** A rollout or critical write with the webhook events of what it changed, in its transaction. */
async function withRolloutEvents(
  trx: Kysely<DB>,
  productSlug: string,
  version: string,
  write: () => Promise<ReleaseRollout>,
): Promise<ReleaseRollout> {
  const before = await readRollout(trx, productSlug, version);
  const after = await write();
  await emitRolloutEvents(trx, before, after);
  return after;
}

/** Puts a version into a rollout or changes its plan (release.rollout, with the plan). */
export const setRolloutAudited = (
  db: Kysely<DB>,
  actor: Actor,
  productSlug: string,
  version: string,
  plan: RolloutPlan,
) =>
  withAudit(
    db,
    actor,
    "release.rollout",
    (trx) =>
      withRolloutEvents(trx, productSlug, version, () =>
        setRollout(trx, productSlug, version, plan),
      ),
    () => ({ target: releaseTarget(productSlug, version), details: { ...plan } }),
  );

/** release.rollout_pause, release.rollout_resume, release.rollout_complete. */
export const changeRolloutAudited = (
  db: Kysely<DB>,
  actor: Actor,
  productSlug: string,
  version: string,
  change: RolloutChange,
) =>
  withAudit(
    db,
    actor,
    `release.rollout_${change}`,
    (trx) =>
      withRolloutEvents(trx, productSlug, version, () =>
        changeRollout(trx, productSlug, version, change),
      ),
    () => ({ target: releaseTarget(productSlug, version) }),
  );

/** Marks a version critical or not (release.critical, with the value). */
export const setCriticalAudited = (
  db: Kysely<DB>,
  actor: Actor,
  productSlug: string,
  version: string,
  critical: boolean,
) =>
  withAudit(
    db,
    actor,
    "release.critical",
    (trx) =>
      withRolloutEvents(trx, productSlug, version, () =>
        setCritical(trx, productSlug, version, critical),
      ),
    () => ({ target: releaseTarget(productSlug, version), details: { critical } }),
  );

/** Withdraws a version from the feeds (release.yank) or restores it (release.unyank). */
export const setReleaseYankedAudited = (
  db: Kysely<DB>,
  actor: Actor,
  productSlug: string,
  version: string,
  yanked: boolean,
) =>
  withAudit(
    db,
    actor,
    yanked ? "release.yank" : "release.unyank",
    async (trx) => {
      const result = await setReleaseYanked(trx, productSlug, version, yanked);
      if (yanked) {
        await emitWebhookEvent(trx, {
          type: "release.yanked",
          product: productSlug,
          data: { product: productSlug, version, yankedAt: result.yankedAt },
        });
      }
      return result;
    },
    () => ({ target: { type: "release", id: `${productSlug}@${version}` } }),
  );

/**
 * Never the password: the account's email only. The argon2 hash (tens of milliseconds) is made
 * before the transaction, so SQLite's write lock is not held while it runs.
 */
export const createAdminAudited = async (
  db: Kysely<DB>,
  actor: Actor,
  input: { email: string; password: string },
) => {
  const admin = await prepareAdmin(input);
  return withAudit(
    db,
    actor,
    "admin.create",
    (trx) => insertAdmin(trx, admin),
    (created) => ({ target: { type: "admin", id: created.email } }),
  );
};

/** Never the password. The account's sessions end in the same transaction. */
export const resetAdminPasswordAudited = async (
  db: Kysely<DB>,
  actor: Actor,
  input: { email: string; password: string },
) => {
  const passwordHash = await preparePassword(input.password);
  return withAudit(
    db,
    actor,
    "admin.reset_password",
    (trx) => setAdminPassword(trx, input.email, passwordHash),
    (admin) => ({ target: { type: "admin", id: admin.email } }),
  );
};

/** Refused for the last admin (LAST_ADMIN); the account's sessions end with it. */
export const removeAdminAudited = (db: Kysely<DB>, actor: Actor, email: string) =>
  withAudit(
    db,
    actor,
    "admin.remove",
    (trx) => removeAdmin(trx, email),
    (admin) => ({ target: { type: "admin", id: admin.email } }),
  );

const endpointTarget = (id: string) => ({ type: "webhook_endpoint", id });

/** Never the secret: the URL's origin (urlOrigin: never its path or query), events and products. */
export const createWebhookEndpointAudited = (
  db: Kysely<DB>,
  actor: Actor,
  masterKey: MasterKey,
  input: EndpointSettings & { url: string; events: string[] },
  policy: UrlPolicy,
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
  );

export const updateWebhookEndpointAudited = (
  db: Kysely<DB>,
  actor: Actor,
  id: string,
  changes: EndpointSettings,
  policy: UrlPolicy,
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

export const deleteWebhookEndpointAudited = (db: Kysely<DB>, actor: Actor, id: string) =>
  withAudit(
    db,
    actor,
    "webhook_endpoint.delete",
    (trx) => deleteWebhookEndpoint(trx, id),
    () => ({ target: endpointTarget(id) }),
  );

export const rotateWebhookSecretAudited = (
  db: Kysely<DB>,
  actor: Actor,
  masterKey: MasterKey,
  id: string,
  graceSeconds: number,
  now?: number,
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
  );

export const redeliverWebhookAudited = (
  db: Kysely<DB>,
  actor: Actor,
  id: string,
  eventId: string,
  now?: number,
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
  );

export const sendWebhookTestAudited = (db: Kysely<DB>, actor: Actor, id: string, now?: number) =>
  withAudit(
    db,
    actor,
    "webhook_endpoint.test",
    (trx) => sendWebhookTest(trx, id, now),
    (delivery) => ({ target: endpointTarget(id), details: { eventId: delivery.eventId } }),
  );
