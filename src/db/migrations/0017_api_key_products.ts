import type { Kysely } from "kysely";

/**
 * api_keys.products: the products a key may act on, as a JSON array of product ids (ids, not
 * slugs: a product deleted and made again under its slug is not the key's product), or null for
 * a key that may act on every product (every key made before this column).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("api_keys").addColumn("products", "text").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("api_keys").dropColumn("products").execute();
}
