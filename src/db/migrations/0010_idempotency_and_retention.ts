import { type Kysely, sql } from "kysely";

/**
 * - idempotency_keys: the admin API's Idempotency-Key claims and stored answers, one row per
 *   (caller, key), claimed by an insert guarded by the primary key.
 * - licenses.external_id: a caller's own reference (an order id), unique per product; NULLs do
 *   not collide on either dialect.
 * - Indexes that let the pruning job find old rows without scanning whole tables.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("idempotency_keys")
    .addColumn("caller", "varchar(128)", (c) => c.notNull())
    .addColumn("key", "varchar(255)", (c) => c.notNull())
    .addColumn("fingerprint", "varchar(64)", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("status_code", "integer")
    .addColumn("response_headers", "text")
    .addColumn("response_body", "text")
    .addPrimaryKeyConstraint("idempotency_keys_pk", ["caller", "key"])
    .execute();
  await db.schema
    .createIndex("idempotency_keys_created_idx")
    .on("idempotency_keys")
    .column("created_at")
    .execute();

  await db.schema.alterTable("licenses").addColumn("external_id", "varchar(255)").execute();
  await db.schema
    .createIndex("licenses_product_external_id_unique")
    .on("licenses")
    .columns(["product_id", "external_id"])
    .unique()
    .execute();

  await db.schema
    .createIndex("activations_ended_idx")
    .on("activations")
    .column("deactivated_at")
    .where(sql.ref("deactivated_at"), "is not", null)
    .execute();
  await db.schema
    .createIndex("admin_sessions_expires_idx")
    .on("admin_sessions")
    .column("expires_at")
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex("admin_sessions_expires_idx").execute();
  await db.schema.dropIndex("activations_ended_idx").execute();
  await db.schema.dropIndex("licenses_product_external_id_unique").execute();
  await db.schema.alterTable("licenses").dropColumn("external_id").execute();
  await db.schema.dropTable("idempotency_keys").execute();
}
