import type { Kysely } from "kysely";

/**
 * daily_counts: what the license endpoints did, per product, UTC day, event and refusal code,
 * added to by the buffered flush (domain/releases/usage-counts.ts), never written per request.
 * Events: activation, activation_refused (code: the refusal's), deactivation, validation,
 * validation_refused (code). The overview reads a month of them by (day, product).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("daily_counts")
    .addColumn("day", "varchar(10)", (c) => c.notNull())
    .addColumn("product_id", "varchar(64)", (c) =>
      c.notNull().references("products.id").onDelete("cascade"),
    )
    .addColumn("event", "varchar(32)", (c) => c.notNull())
    .addColumn("code", "varchar(64)", (c) => c.notNull())
    .addColumn("count", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("daily_counts_pk", ["day", "product_id", "event", "code"])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("daily_counts").execute();
}
