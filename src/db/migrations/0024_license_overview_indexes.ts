import { type Kysely, sql } from "kysely";

/**
 * Indexes for the overview's license counts (domain/overview/overview.ts) and the licenses list
 * (browseLicenses, listLicenses), so that with a million licenses none of them walks or sorts a
 * product's licenses row by row:
 * - licenses_product_created_idx (product_id, created_at, id): a product's licenses newest first
 *   (the list's default order, the admin API's and the CSV export's cursor pages), and counts;
 * - licenses_product_customer_idx (product_id, customer_name, id): a product's licenses by
 *   customer. Of all products they are sorted (one pass over the table); by machines in use too,
 *   with or without a product: active_machines changes on every activation and deactivation,
 *   and an index on it would be rewritten by each;
 * - licenses_product_expires_idx (product_id, expires_at, id) replaces licenses_product_idx: the
 *   same lookups by product, a product's licenses by expiry (id breaks ties, as the list does:
 *   licenses that never expire share one), and those expiring soon; licenses_expires_idx
 *   (expires_at, id) for all products;
 * - licenses_not_active_idx (product_id, status): only the licenses that are not ACTIVE, few;
 * - licenses_at_limit_idx: only the licenses at their machine limit. Activations and
 *   deactivations change it only for a license that reaches or leaves its limit.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex("licenses_product_expires_idx")
    .on("licenses")
    .columns(["product_id", "expires_at", "id"])
    .execute();
  await db.schema.dropIndex("licenses_product_idx").execute();
  await db.schema
    .createIndex("licenses_product_created_idx")
    .on("licenses")
    .columns(["product_id", "created_at", "id"])
    .execute();
  await db.schema
    .createIndex("licenses_product_customer_idx")
    .on("licenses")
    .columns(["product_id", "customer_name", "id"])
    .execute();
  await db.schema
    .createIndex("licenses_expires_idx")
    .on("licenses")
    .columns(["expires_at", "id"])
    .execute();
  // Partial, so that a list of ACTIVE licenses (nearly all of them) still reads them in the
  // order it shows instead of sorting every one.
  await db.schema
    .createIndex("licenses_not_active_idx")
    .on("licenses")
    .columns(["product_id", "status"])
    .where(sql.ref("status"), "<>", "ACTIVE")
    .execute();
  await db.schema
    .createIndex("licenses_at_limit_idx")
    .on("licenses")
    .columns(["product_id", "active_machines"])
    .where(sql.ref("active_machines"), ">=", sql.ref("max_machines"))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex("licenses_at_limit_idx").execute();
  await db.schema.dropIndex("licenses_not_active_idx").execute();
  await db.schema.dropIndex("licenses_expires_idx").execute();
  await db.schema.dropIndex("licenses_product_customer_idx").execute();
  await db.schema.dropIndex("licenses_product_created_idx").execute();
  await db.schema.createIndex("licenses_product_idx").on("licenses").column("product_id").execute();
  await db.schema.dropIndex("licenses_product_expires_idx").execute();
}
