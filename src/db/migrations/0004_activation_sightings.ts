import { type Kysely, SqliteAdapter } from "kysely";

/**
 * An append-only log of validate's last-seen times, folded into activations.last_seen_at now and
 * then (src/db/sqlite-last-seen-log.ts). Used by the server on SQLite, where updating random rows
 * of a large activations table in place cost ~45 us per validate at 1 M licenses; an append costs
 * ~3 us at any size. PostgreSQL keeps updating in place and never writes here; the table exists on
 * both so that the schema is the same.
 *
 * No index and no foreign key: an append touches only the table's last page. A sighting of an
 * activation deleted since is dropped by the fold.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  await db.schema
    .createTable("activation_sightings")
    // Never reused (AUTOINCREMENT / identity): a fold deletes exactly the sightings it read.
    .addColumn("seq", sqlite ? "integer" : "bigint", (c) =>
      sqlite ? c.primaryKey().autoIncrement() : c.primaryKey().generatedAlwaysAsIdentity(),
    )
    .addColumn("activation_id", "varchar(64)", (c) => c.notNull())
    .addColumn("seen_at", "bigint", (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("activation_sightings").execute();
}
