import type { Kysely } from "kysely";

/**
 * audit_log_target_idx: the entries about one target (the releases page's "Published by").
 *
 * api_keys.products: the products a key may act on, as a JSON array of product ids (ids, not
 * slugs: a product deleted and made again under its slug is not the key's product), or null for
 * a key that may act on every product (every key made before this column).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("api_keys").addColumn("products", "text").execute();
  await db.schema
    .createIndex("audit_log_target_idx")
    .on("audit_log")
    .columns(["target_type", "target_id", "at"])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex("audit_log_target_idx").execute();
  await db.schema.alterTable("api_keys").dropColumn("products").execute();
}
