import type { Kysely } from "kysely";

/**
 * - release_artifacts.sha512: base64 of the artifact's SHA-512 digest, as electron-builder writes
 *   it; electron-updater refuses a file without one.
 * - release_versions.yanked_at: when an admin withdrew the version (epoch ms); null while the
 *   feeds offer it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("release_artifacts").addColumn("sha512", "text").execute();
  await db.schema.alterTable("release_versions").addColumn("yanked_at", "bigint").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("release_versions").dropColumn("yanked_at").execute();
  await db.schema.alterTable("release_artifacts").dropColumn("sha512").execute();
}
