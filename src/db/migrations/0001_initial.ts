import { type Kysely, sql } from "kysely";

// Migrations take Kysely<unknown>: they must not depend on today's table types.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("products")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("slug", "varchar(255)", (c) => c.notNull().unique())
    .addColumn("name", "varchar(255)", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("licenses")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("license_key", "varchar(255)", (c) => c.notNull().unique())
    .addColumn("product_id", "varchar(64)", (c) => c.notNull().references("products.id"))
    .addColumn("status", "varchar(16)", (c) => c.notNull())
    .addColumn("expires_at", "bigint")
    .addColumn("edition", "varchar(255)")
    .addColumn("edition_name", "varchar(255)")
    .addColumn("features", "text", (c) => c.notNull().defaultTo("[]"))
    .addColumn("max_machines", "integer", (c) => c.notNull())
    .addColumn("active_machines", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addCheckConstraint("licenses_max_machines_non_negative", sql`max_machines >= 0`)
    .addCheckConstraint("licenses_active_machines_non_negative", sql`active_machines >= 0`)
    .addCheckConstraint("licenses_status_known", sql`status in ('ACTIVE', 'SUSPENDED', 'REVOKED')`)
    .execute();
  await db.schema.createIndex("licenses_product_idx").on("licenses").column("product_id").execute();

  await db.schema
    .createTable("activations")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("license_id", "varchar(64)", (c) => c.notNull().references("licenses.id"))
    .addColumn("machine_id", "varchar(255)", (c) => c.notNull())
    .addColumn("machine_name", "varchar(255)")
    .addColumn("platform", "varchar(255)")
    .addColumn("activated_at", "bigint", (c) => c.notNull())
    .addColumn("last_seen_at", "bigint", (c) => c.notNull())
    .addColumn("deactivated_at", "bigint")
    .execute();
  // At most one activation holding a slot per (license, machine): the database, not the
  // process, arbitrates concurrent activations of the same machine.
  await db.schema
    .createIndex("activations_one_active_per_machine")
    .on("activations")
    .columns(["license_id", "machine_id"])
    .unique()
    .where(sql.ref("deactivated_at"), "is", null)
    .execute();
  await db.schema
    .createIndex("activations_license_idx")
    .on("activations")
    .columns(["license_id", "activated_at"])
    .execute();

  await db.schema
    .createTable("release_versions")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("product_id", "varchar(64)", (c) => c.notNull().references("products.id"))
    .addColumn("version", "varchar(255)", (c) => c.notNull())
    .addColumn("channel", "varchar(16)", (c) => c.notNull())
    .addColumn("release_notes", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addUniqueConstraint("release_versions_product_version_unique", ["product_id", "version"])
    .addCheckConstraint(
      "release_versions_channel_known",
      sql`channel in ('STABLE', 'BETA', 'ALPHA')`,
    )
    .execute();

  await db.schema
    .createTable("release_artifacts")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("version_id", "varchar(64)", (c) => c.notNull().references("release_versions.id"))
    .addColumn("platform", "varchar(16)", (c) => c.notNull())
    .addColumn("arch", "varchar(16)", (c) => c.notNull())
    .addColumn("download_url", "varchar(2048)", (c) => c.notNull())
    .addColumn("signature", "text")
    .addColumn("file_size", "bigint")
    .addColumn("revision", "integer", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addCheckConstraint(
      "release_artifacts_platform_known",
      sql`platform in ('WINDOWS', 'MACOS', 'LINUX')`,
    )
    .addCheckConstraint("release_artifacts_arch_known", sql`arch in ('X64', 'ARM64')`)
    .addUniqueConstraint("release_artifacts_version_platform_arch_unique", [
      "version_id",
      "platform",
      "arch",
    ])
    .execute();

  await db.schema
    .createTable("api_keys")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("name", "varchar(255)", (c) => c.notNull())
    .addColumn("key_hash", "varchar(64)", (c) => c.notNull().unique())
    .addColumn("display_prefix", "varchar(32)", (c) => c.notNull())
    .addColumn("scopes", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("last_used_at", "bigint")
    .addColumn("expires_at", "bigint")
    .addColumn("revoked_at", "bigint")
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    "api_keys",
    "release_artifacts",
    "release_versions",
    "activations",
    "licenses",
    "products",
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
