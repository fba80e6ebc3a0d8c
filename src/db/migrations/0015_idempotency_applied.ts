import type { Kysely } from "kysely";

/**
 * idempotency_keys.applied_at: when the claimed request's write committed (set in that write's
 * transaction, with its audit entry). A claim applied but never answered (the process died
 * between the commit and storing the answer) is never run again.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("idempotency_keys").addColumn("applied_at", "bigint").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("idempotency_keys").dropColumn("applied_at").execute();
}
