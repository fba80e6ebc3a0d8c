import type { Kysely } from "kysely";

/**
 * - products.updates_require_license (0/1): the feeds and downloads answer only a machine
 *   activated on a usable license of the product.
 * - products.download_redirects (0/1): the feeds hand out /api/downloads/... (counted) instead
 *   of the stored URLs.
 * - download_counts: downloads through the redirect, per version, platform and UTC day.
 * - update_checks: feed requests per product, current version ("" when the client did not say or
 *   named a version the product never published), platform, channel and UTC day.
 * Both counts are added to by the buffered flush, never written per request.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable("products")
    .addColumn("updates_require_license", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable("products")
    .addColumn("download_redirects", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable("download_counts")
    .addColumn("version_id", "varchar(64)", (c) =>
      c.notNull().references("release_versions.id").onDelete("cascade"),
    )
    .addColumn("platform", "varchar(16)", (c) => c.notNull())
    .addColumn("day", "varchar(10)", (c) => c.notNull())
    .addColumn("count", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("download_counts_pk", ["version_id", "platform", "day"])
    .execute();
  await db.schema
    .createTable("update_checks")
    .addColumn("product_id", "varchar(64)", (c) =>
      c.notNull().references("products.id").onDelete("cascade"),
    )
    .addColumn("day", "varchar(10)", (c) => c.notNull())
    .addColumn("current_version", "varchar(255)", (c) => c.notNull())
    .addColumn("platform", "varchar(16)", (c) => c.notNull())
    .addColumn("channel", "varchar(16)", (c) => c.notNull())
    .addColumn("count", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("update_checks_pk", [
      "product_id",
      "day",
      "current_version",
      "platform",
      "channel",
    ])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("update_checks").execute();
  await db.schema.dropTable("download_counts").execute();
  await db.schema.alterTable("products").dropColumn("download_redirects").execute();
  await db.schema.alterTable("products").dropColumn("updates_require_license").execute();
}
