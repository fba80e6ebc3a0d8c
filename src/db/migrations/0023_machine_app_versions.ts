import type { Kysely } from "kysely";

/**
 * activations.app_version: the version of the app that last reported one from the machine (the
 * SDK's appVersion, sent with activate, validate and checkout; validate's is written by the
 * buffered last-seen flush). null: the app never reported one (not the SDK, or an older SDK).
 * The dashboard counts active machines per version from it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("activations").addColumn("app_version", "varchar(128)").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("activations").dropColumn("app_version").execute();
}
