import { type Kysely, SqliteAdapter } from "kysely";

/** A table for last-seen times that 0005 replaces and 0007 removes; kept for the history. */
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
