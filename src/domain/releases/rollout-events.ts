import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import type { ReleaseRollout } from "../../contracts/release-versions.js";
import { emitWebhookEvent } from "../webhooks/events.js";

/** What a rollout write did, as release.rollout_changed names it (docs/webhooks.md). */
export type RolloutChangeKind = "started" | "changed" | "paused" | "resumed" | "completed";

/** What changed between two reads of a version's rollout; null when nothing did. */
export function rolloutChangeOf(
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
export async function emitRolloutEvents(
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
