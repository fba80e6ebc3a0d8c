import { type Kysely, SqliteAdapter, sql } from "kysely";
import { up as createActivationSightings } from "./0004_activation_sightings.js";

/**
 * Replaces 0004's table with one keyed by machine (license id, machine id). Times left in
 * activation_sightings are applied to their activations first, so upgrading loses none.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await createMachineSightings(db);
  await sql`update activations set last_seen_at = s.seen_at
    from (select activation_id, max(seen_at) as seen_at from activation_sightings
          group by activation_id) as s
    where activations.id = s.activation_id and s.seen_at > activations.last_seen_at`.execute(db);
  await db.schema.dropTable("activation_sightings").execute();
}

/** The log's table, empty (also 0007's down()). */
export async function createMachineSightings(db: Kysely<unknown>): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  await db.schema
    .createTable("machine_sightings")
    // Never reused (AUTOINCREMENT / identity): a fold deletes exactly the sightings it read.
    .addColumn("seq", sqlite ? "integer" : "bigint", (c) =>
      sqlite ? c.primaryKey().autoIncrement() : c.primaryKey().generatedAlwaysAsIdentity(),
    )
    .addColumn("license_id", "varchar(64)", (c) => c.notNull())
    .addColumn("machine_id", "varchar(255)", (c) => c.notNull())
    .addColumn("seen_at", "bigint", (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await createActivationSightings(db);
  // Pending sightings go back to the old log, each to the machine's active activation.
  await sql`insert into activation_sightings (activation_id, seen_at)
    select activations.id, machine_sightings.seen_at from machine_sightings
    join activations on activations.license_id = machine_sightings.license_id
      and activations.machine_id = machine_sightings.machine_id
      and activations.deactivated_at is null`.execute(db);
  await db.schema.dropTable("machine_sightings").execute();
}
