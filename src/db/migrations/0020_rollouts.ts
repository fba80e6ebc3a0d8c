import type { Kysely } from "kysely";

/**
 * Phased rollouts and critical updates, per version (domain/releases/rollout.ts):
 * - release_versions.critical (0/1): offered to every machine whatever its rollout, and marked
 *   critical in the feeds that carry it.
 * - release_versions.rollout_started_at (epoch ms): set while the version is in a rollout, null
 *   once released to everyone. With it, either rollout_percent (1 to 100: the share of machines
 *   offered the version) or rollout_step_hours (a schedule: a seventh more machines every that
 *   many hours from rollout_started_at, as Sparkle's phased groups).
 * - release_versions.rollout_paused_at (epoch ms): set while the rollout is halted.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable("release_versions")
    .addColumn("critical", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
  for (const [column, type] of [
    ["rollout_started_at", "bigint"],
    ["rollout_percent", "integer"],
    ["rollout_step_hours", "integer"],
    ["rollout_paused_at", "bigint"],
  ] as const) {
    await db.schema.alterTable("release_versions").addColumn(column, type).execute();
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const column of [
    "rollout_paused_at",
    "rollout_step_hours",
    "rollout_percent",
    "rollout_started_at",
    "critical",
  ]) {
    await db.schema.alterTable("release_versions").dropColumn(column).execute();
  }
}
