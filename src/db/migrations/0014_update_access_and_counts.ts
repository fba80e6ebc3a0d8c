import { type Kysely, SqliteAdapter, sql } from "kysely";
import { versionSortKey } from "../../lib/version-sort-key.js";

/**
 * - products.updates_require_license (0/1): the feeds and downloads answer only a machine
 *   activated on a usable license of the product.
 * - products.download_redirects (0/1): the feeds hand out /api/downloads/... (counted) instead
 *   of the stored URLs.
 * - download_counts: downloads through the redirect, per version, platform and UTC day.
 * - update_checks: feed requests per product, current version ("" when the client did not say or
 *   named a version the product never published), platform, channel and UTC day.
 * Both counts are added to by the buffered flush, never written per request.
 * - release_versions.sort_key: semver precedence as plain text (domain/releases/version.ts), so
 *   the feeds read the newest versions through an index instead of every version. Collation "C"
 *   on PostgreSQL (the key's characters order the same in any collation; this makes it explicit).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const postgres = !(db.getExecutor().adapter instanceof SqliteAdapter);
  await db.schema
    .alterTable("release_versions")
    .addColumn("sort_key", "varchar(1200)", (c) =>
      (postgres ? c.modifyFront(sql`collate "C"`) : c).notNull().defaultTo(""),
    )
    .execute();
  const versions = await sql<{ id: string; version: string }>`
    select id, version from release_versions`.execute(db);
  for (const { id, version } of versions.rows) {
    await sql`update release_versions set sort_key = ${versionSortKey(version)}
      where id = ${id}`.execute(db);
  }
  await db.schema
    .createIndex("release_versions_product_sort_idx")
    .on("release_versions")
    .columns(["product_id", "sort_key"])
    .execute();
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
  await db.schema.dropIndex("release_versions_product_sort_idx").execute();
  await db.schema.alterTable("release_versions").dropColumn("sort_key").execute();
  await db.schema.dropTable("update_checks").execute();
  await db.schema.dropTable("download_counts").execute();
  await db.schema.alterTable("products").dropColumn("download_redirects").execute();
  await db.schema.alterTable("products").dropColumn("updates_require_license").execute();
}
