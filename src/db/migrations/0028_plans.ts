import { type Kysely, sql } from "kysely";

/**
 * plans: a product's license templates (domain/plans/plans.ts). A license made from a plan
 * copies its settings; the plan's slug is the vendor's stable code for it, unique per product.
 * - duration_days: null for a perpetual license; updates_window_days: null for updates as long as
 *   the license is valid.
 * - subscription, grace_days: a subscription's license expires at the paid period's end plus the
 *   grace.
 * - on_refund, on_chargeback: what a full refund and a chargeback do to the plan's licenses.
 * - floating_lease_minutes: the lease of a floating plan's seats (1 to 1440); null: not floating.
 * - archived_at: an archived plan makes no new license and is kept for the licenses it made.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("plans")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("product_id", "varchar(64)", (c) => c.notNull().references("products.id"))
    .addColumn("slug", "varchar(255)", (c) => c.notNull())
    .addColumn("name", "varchar(255)", (c) => c.notNull())
    .addColumn("edition", "varchar(255)")
    .addColumn("edition_name", "varchar(255)")
    .addColumn("features", "text", (c) => c.notNull().defaultTo("[]"))
    .addColumn("max_machines", "integer", (c) => c.notNull())
    .addColumn("duration_days", "integer")
    .addColumn("updates_window_days", "integer")
    .addColumn("subscription", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("grace_days", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("on_refund", "varchar(16)", (c) => c.notNull().defaultTo("revoke"))
    .addColumn("on_chargeback", "varchar(16)", (c) => c.notNull().defaultTo("suspend"))
    .addColumn("floating_lease_minutes", "integer")
    .addColumn("archived_at", "bigint")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addUniqueConstraint("plans_product_slug_unique", ["product_id", "slug"])
    .addCheckConstraint("plans_max_machines_positive", sql`max_machines >= 1`)
    .addCheckConstraint("plans_grace_days_non_negative", sql`grace_days >= 0`)
    .addCheckConstraint("plans_on_refund_known", sql`on_refund in ('revoke', 'suspend', 'nothing')`)
    .addCheckConstraint(
      "plans_on_chargeback_known",
      sql`on_chargeback in ('revoke', 'suspend', 'nothing')`,
    )
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("plans").execute();
}
