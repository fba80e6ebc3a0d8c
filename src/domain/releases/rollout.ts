import { createHash } from "node:crypto";
import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { isoOrNull, toIso } from "../../lib/time.js";
import { requireProduct } from "../products/products.js";
import { rolloutSteps } from "../../contracts/vocabulary.js";
import type { ReleaseRollout, RolloutView } from "../../contracts/release-versions.js";

/**
 * A version's phased rollout: the share of machines offered it grows from a percentage or on a
 * schedule (a seventh more every `stepHours`, like Sparkle's seven phased groups); a pause halts
 * it for every machine that does not have the version yet; completing releases it to everyone
 * (the rollout is gone). A critical version ignores the share, not the pause.
 */
export interface Rollout {
  startedAt: number;
  percent: number | null;
  stepHours: number | null;
  pausedAt: number | null;
}

/** The stored columns of a rollout, as the feed statement and the admin reads select them. */
export interface RolloutColumns {
  rollout_started_at: number | string | null;
  rollout_percent: number | null;
  rollout_step_hours: number | null;
  rollout_paused_at: number | string | null;
}

export function rolloutOf(row: RolloutColumns): Rollout | null {
  if (row.rollout_started_at === null) return null;
  return {
    startedAt: Number(row.rollout_started_at),
    percent: row.rollout_percent,
    stepHours: row.rollout_step_hours,
    pausedAt: row.rollout_paused_at === null ? null : Number(row.rollout_paused_at),
  };
}

const hourMs = 3_600_000;

/** How many of the schedule's seven steps have begun at `now` (1 at the start, at most 7). */
export function scheduleSteps(rollout: Rollout, now: number): number {
  const stepMs = (rollout.stepHours ?? 24) * hourMs;
  const since = Math.max(0, (rollout.pausedAt ?? now) - rollout.startedAt);
  return Math.min(rolloutSteps, Math.floor(since / stepMs) + 1);
}

/**
 * The whole percentage of machines the rollout reaches at `now`, pause aside: the set percentage,
 * or the schedule's steps begun as a share of seven, rounded down (7 steps: 100).
 */
export function rolloutPercent(rollout: Rollout, now: number): number {
  if (rollout.percent !== null) return rollout.percent;
  return Math.floor((scheduleSteps(rollout, now) * 100) / rolloutSteps);
}

/**
 * Where a machine stands for a version, in [0, 1): the first 32 bits of SHA-256 over the version
 * and the machine. Stable across checks; independent between versions (a machine early for one
 * version is not early for all); a raised percentage only adds machines.
 */
export function machinePosition(machine: string, version: string): number {
  const digest = createHash("sha256").update(version).update("\n").update(machine).digest();
  return digest.readUInt32BE(0) / 2 ** 32;
}

/**
 * Who decides whether a machine is in a rollout: the server, from the machine's key (Tauri,
 * Squirrel.Mac, the generic feed, the SDK); the server, from the share electron-updater computes
 * itself from its staging id (the same test electron-updater makes); or the client alone
 * (Sparkle, electron-updater without its id), which the feed tells the rollout.
 */
export type Audience = { machine: string } | { stagingShare: number } | "client";

/**
 * Whether a version is offered: a released one always; a paused rollout never (to a machine
 * that has the version, the feeds offer nothing older anyway); a critical version whatever its
 * share; else when the machine's position is below the share now (the client decides: always).
 */
export function isOffered(
  release: { version: string; critical: boolean; rollout: Rollout | null },
  audience: Audience,
  now: number,
): boolean {
  const { rollout } = release;
  if (rollout === null) return true;
  if (rollout.pausedAt !== null) return false;
  if (release.critical || audience === "client") return true;
  const share = rolloutPercent(rollout, now) / 100;
  const position =
    "machine" in audience
      ? machinePosition(audience.machine, release.version)
      : audience.stagingShare;
  return position < share;
}

/** A rollout as the admin API shows it. */
export function rolloutView(rollout: Rollout | null, now: number): RolloutView | null {
  if (rollout === null) return null;
  return {
    state: rollout.pausedAt === null ? "rolling" : "paused",
    percent: rolloutPercent(rollout, now),
    stepHours: rollout.stepHours,
    startedAt: toIso(rollout.startedAt),
    pausedAt: isoOrNull(rollout.pausedAt),
  };
}

/** A new rollout: a percentage of machines now, or a schedule of seven steps. */
export type RolloutPlan = { percent: number } | { stepHours: number };

const releaseColumns = [
  "id",
  "critical",
  "rollout_started_at",
  "rollout_percent",
  "rollout_step_hours",
  "rollout_paused_at",
] as const;

async function readVersion(db: Kysely<DB>, productSlug: string, version: string) {
  const product = await requireProduct(db, productSlug);
  const row = await db
    .selectFrom("release_versions")
    .select(releaseColumns)
    .where("product_id", "=", product.id)
    .where("version", "=", version)
    .executeTakeFirst();
  if (!row) throw new ShipkeyError("RELEASE_NOT_FOUND", `No version ${version} of ${productSlug}`);
  return row;
}

/** A version's rollout and critical mark as the admin API shows them; 404 for an unknown one. */
export async function readRollout(
  db: Kysely<DB>,
  productSlug: string,
  version: string,
  now = Date.now(),
): Promise<ReleaseRollout> {
  return answer(db, productSlug, version, now);
}

async function answer(
  db: Kysely<DB>,
  productSlug: string,
  version: string,
  now: number,
): Promise<ReleaseRollout> {
  const row = await readVersion(db, productSlug, version);
  return {
    product: productSlug,
    version,
    critical: row.critical === 1,
    rollout: rolloutView(rolloutOf(row), now),
  };
}

/**
 * Puts a version into a rollout, or changes its plan: a percentage keeps the rollout's start, a
 * schedule starts now. A paused rollout stays paused.
 */
export async function setRollout(
  db: Kysely<DB>,
  productSlug: string,
  version: string,
  plan: RolloutPlan,
  now = Date.now(),
): Promise<ReleaseRollout> {
  const row = await readVersion(db, productSlug, version);
  const started = row.rollout_started_at === null ? now : Number(row.rollout_started_at);
  await db
    .updateTable("release_versions")
    .set(
      "percent" in plan
        ? { rollout_started_at: started, rollout_percent: plan.percent, rollout_step_hours: null }
        : {
            rollout_started_at: now,
            rollout_percent: null,
            rollout_step_hours: plan.stepHours,
            // A paused schedule starts from its pause: it counts from the resume.
            ...(row.rollout_paused_at === null ? {} : { rollout_paused_at: now }),
          },
    )
    .where("id", "=", row.id)
    .execute();
  return answer(db, productSlug, version, now);
}

export type RolloutChange = "pause" | "resume" | "complete";

/**
 * Pauses (a pause of a paused rollout keeps its first time), resumes (a schedule continues where
 * it stopped: its start moves by the pause) or completes a rollout (the version is released to
 * everyone). A version in no rollout: 409 NO_ROLLOUT.
 */
export async function changeRollout(
  db: Kysely<DB>,
  productSlug: string,
  version: string,
  change: RolloutChange,
  now = Date.now(),
): Promise<ReleaseRollout> {
  const row = await readVersion(db, productSlug, version);
  const rollout = rolloutOf(row);
  if (rollout === null) {
    throw new ShipkeyError(
      "NO_ROLLOUT",
      `Version ${version} of ${productSlug} is not in a rollout`,
    );
  }
  const update = db.updateTable("release_versions").where("id", "=", row.id);
  if (change === "pause") {
    await update.set({ rollout_paused_at: rollout.pausedAt ?? now }).execute();
  } else if (change === "resume") {
    const paused = rollout.pausedAt === null ? 0 : now - rollout.pausedAt;
    await update
      .set({ rollout_paused_at: null, rollout_started_at: rollout.startedAt + paused })
      .execute();
  } else {
    await update
      .set({
        rollout_started_at: null,
        rollout_percent: null,
        rollout_step_hours: null,
        rollout_paused_at: null,
      })
      .execute();
  }
  return answer(db, productSlug, version, now);
}

/** Marks a version critical (offered to every machine whatever its rollout) or not. */
export async function setCritical(
  db: Kysely<DB>,
  productSlug: string,
  version: string,
  critical: boolean,
  now = Date.now(),
): Promise<ReleaseRollout> {
  const row = await readVersion(db, productSlug, version);
  await db
    .updateTable("release_versions")
    .set({ critical: critical ? 1 : 0 })
    .where("id", "=", row.id)
    .execute();
  return answer(db, productSlug, version, now);
}
