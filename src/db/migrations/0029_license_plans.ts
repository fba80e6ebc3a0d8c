import type { Kysely } from "kysely";

/**
 * - licenses.plan_id: the plan a license was made from; null for a license made by hand. A plan
 *   with licenses cannot be deleted, only archived.
 * - licenses.updates_until: the end of the license's updates window, from its plan's
 *   updates_window_days; null: updates for as long as the license is valid.
 * - licenses_plan_idx: a plan's licenses (counted on every plan answer, and before a deletion).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // One column a statement: SQLite's ALTER TABLE adds one at a time.
  await db.schema
    .alterTable("licenses")
    .addColumn("plan_id", "varchar(64)", (c) => c.references("plans.id"))
    .execute();
  await db.schema.alterTable("licenses").addColumn("updates_until", "bigint").execute();
  await db.schema.createIndex("licenses_plan_idx").on("licenses").column("plan_id").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex("licenses_plan_idx").execute();
  await db.schema.alterTable("licenses").dropColumn("updates_until").execute();
  await db.schema.alterTable("licenses").dropColumn("plan_id").execute();
}
