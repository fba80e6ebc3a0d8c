import type { Kysely } from "kysely";

/**
 * products.tauri_public_key: the product's minisign public key for the Tauri updater, as in
 * tauri.conf.json (`plugins.updater.pubkey`: base64 of the .pub file's text); null when unset.
 * While set, publish refuses a signature that is not a minisign signature by this key.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("products").addColumn("tauri_public_key", "text").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("products").dropColumn("tauri_public_key").execute();
}
