import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import * as manageReleases from "../domain/releases/manage-releases.js";
import {
  applyPublishRollout,
  type CheckedPublish,
  writeRelease,
} from "../domain/releases/publish-release.js";
import { renderReleaseNotes } from "../domain/releases/release-notes.js";
import * as rollout from "../domain/releases/rollout.js";
import { checkTauriSignatures } from "../domain/releases/tauri-signatures.js";
import type { Product } from "../domain/products/products.js";
import { type Actor, withAudit } from "../domain/audit/audit-log.js";
import type { IdempotencyClaim } from "../domain/idempotency/idempotency-keys.js";
import { emitWebhookEvent } from "../domain/webhooks/events.js";
import type { ReleaseRollout } from "../contracts/release-versions.js";
import type { PublishAnswer } from "../contracts/releases.js";
import { type Arch, type Platform } from "../contracts/vocabulary.js";

// Releases: publish, delete, yank, rollouts and the critical mark: the use cases' actions.
// Each runs its checks, its rows, its webhook events and its audit entry in one transaction
// (withAudit), so the admin API, the dashboard and the CLI record the same entry whichever way a
// write was made. Details never hold a secret.

/** A whole version (release.delete), or one platform/arch entry of it (release.delete_entry). */
export const deleteRelease = (
  db: Kysely<DB>,
  actor: Actor,
  productSlug: string,
  version: string,
  entry?: { platform: Platform; arch: Arch },
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    entry ? "release.delete_entry" : "release.delete",
    (trx) => manageReleases.deleteRelease(trx, productSlug, version, entry),
    () => ({
      target: { type: "release", id: `${productSlug}@${version}` },
      ...(entry ? { details: { platform: entry.platform, arch: entry.arch } } : {}),
    }),
    idempotency,
  );

/**
 * A publish (release.publish): the version and every entry, and the entry naming the product,
 * version, channel and each entry created or replaced, in one transaction. Who published is the
 * actor (the API key's id and name). The Tauri signatures are checked first, outside the
 * transaction, so no write lock is held while they are verified.
 */
export const publishRelease = async (
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
  const before = await rollout.readRollout(trx, productSlug, version);
  const after = await write();
  await emitRolloutEvents(trx, before, after);
  return after;
}

/** Puts a version into a rollout or changes its plan (release.rollout, with the plan). */
export const setRollout = (
  db: Kysely<DB>,
  actor: Actor,
  productSlug: string,
  version: string,
  plan: rollout.RolloutPlan,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "release.rollout",
    (trx) =>
      withRolloutEvents(trx, productSlug, version, () =>
        rollout.setRollout(trx, productSlug, version, plan),
      ),
    () => ({ target: releaseTarget(productSlug, version), details: { ...plan } }),
    idempotency,
  );

/** release.rollout_pause, release.rollout_resume, release.rollout_complete. */
export const changeRollout = (
  db: Kysely<DB>,
  actor: Actor,
  productSlug: string,
  version: string,
  change: rollout.RolloutChange,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    `release.rollout_${change}`,
    (trx) =>
      withRolloutEvents(trx, productSlug, version, () =>
        rollout.changeRollout(trx, productSlug, version, change),
      ),
    () => ({ target: releaseTarget(productSlug, version) }),
    idempotency,
  );

/** Marks a version critical or not (release.critical, with the value). */
export const setCritical = (
  db: Kysely<DB>,
  actor: Actor,
  productSlug: string,
  version: string,
  critical: boolean,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "release.critical",
    (trx) =>
      withRolloutEvents(trx, productSlug, version, () =>
        rollout.setCritical(trx, productSlug, version, critical),
      ),
    () => ({ target: releaseTarget(productSlug, version), details: { critical } }),
    idempotency,
  );

/** Withdraws a version from the feeds (release.yank) or restores it (release.unyank). */
export const setReleaseYanked = (
  db: Kysely<DB>,
  actor: Actor,
  productSlug: string,
  version: string,
  yanked: boolean,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    yanked ? "release.yank" : "release.unyank",
    async (trx) => {
      const result = await manageReleases.setReleaseYanked(trx, productSlug, version, yanked);
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
    idempotency,
  );

/** What a rollout write did, as release.rollout_changed names it (docs/webhooks.md). */
type RolloutChangeKind = "started" | "changed" | "paused" | "resumed" | "completed";

/** What changed between two reads of a version's rollout; null when nothing did. */
function rolloutChangeOf(
  before: ReleaseRollout["rollout"],
  after: ReleaseRollout["rollout"],
): RolloutChangeKind | null {
  if (before === null) return after === null ? null : "started";
  if (after === null) return "completed";
  if (before.state !== after.state) return after.state === "paused" ? "paused" : "resumed";
  return JSON.stringify(before) === JSON.stringify(after) ? null : "changed";
}

/**
 * release.rollout_changed and release.critical_changed for a write that took a version from
 * `before` to `after`, in the write's transaction; nothing when the write changed nothing.
 */
async function emitRolloutEvents(
  trx: Kysely<DB>,
  before: ReleaseRollout,
  after: ReleaseRollout,
): Promise<void> {
  const data = {
    product: after.product,
    version: after.version,
    critical: after.critical,
    rollout: after.rollout,
  };
  const change = rolloutChangeOf(before.rollout, after.rollout);
  if (change !== null) {
    await emitWebhookEvent(trx, {
      type: "release.rollout_changed",
      product: after.product,
      data: { ...data, change },
    });
  }
  if (before.critical !== after.critical) {
    await emitWebhookEvent(trx, { type: "release.critical_changed", product: after.product, data });
  }
}
