import { type Kysely, sql } from "kysely";

/**
 * Machine leases (domain/licenses/machine-leases.ts):
 * - products.machine_lease_days: a machine not seen for that many days is deactivated by the
 *   server's sweep; null (the default): machines keep their slot until deactivated.
 * - activations_active_last_seen_idx: the active activations by last-seen, so that the sweep reads
 *   only the machines past a lease, never the whole table.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("products").addColumn("machine_lease_days", "integer").execute();
  await db.schema
    .createIndex("activations_active_last_seen_idx")
    .on("activations")
    .columns(["last_seen_at"])
    .where(sql.ref("deactivated_at"), "is", null)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex("activations_active_last_seen_idx").execute();
  await db.schema.alterTable("products").dropColumn("machine_lease_days").execute();
}
