import { type Kysely, SqliteAdapter, sql } from "kysely";

/**
 * Plain tables on both dialects:
 * - SQLite: drops the triggers and the per-license list of active machines (0006) and renumbers
 *   license rows that sit at rowids computed from their keys (0008) in creation order, so SQLite
 *   places rows itself. Activations refer to licenses by id, not rowid: nothing else moves.
 *   About 20 s per million licenses.
 * - Both: the table /readyz writes to, to tell whether the database takes writes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) {
    for (const trigger of [
      "activations_list_started",
      "activations_list_ended",
      "activations_list_other_change",
      "activations_list_deleted",
      "licenses_list_reinserted",
    ]) {
      await sql`drop trigger if exists ${sql.id(trigger)}`.execute(db);
    }
    const { rows } = await sql<{ name: string }>`
      select name from pragma_table_info('licenses') where name = 'active_machine_ids'`.execute(db);
    if (rows.length > 0) await sql`alter table licenses drop column active_machine_ids`.execute(db);
    await renumberLicenses(db);
  }
  await db.schema
    .createTable("readiness_probe")
    .ifNotExists()
    .addColumn("id", "integer", (c) => c.primaryKey())
    .addColumn("checked_at", "bigint", (c) => c.notNull())
    .execute();
}

/**
 * Licenses at rowids 1..n in creation order, in two passes: first below every rowid in use, then
 * into place, so that no new rowid ever collides with an old one.
 */
async function renumberLicenses(db: Kysely<unknown>): Promise<void> {
  const { rows } = await sql<{ n: number; low: number | null; high: number | null }>`
    select count(*) as n, min(rowid) as low, max(rowid) as high from licenses`.execute(db);
  const { n, low, high } = rows[0] ?? { n: 0, low: null, high: null };
  if (low === null || (low === 1 && high === n)) return; // empty, or already 1..n
  const below = Math.min(low, 0) - 1;
  await sql`create temp table license_rowids as
    select rowid as old, row_number() over (order by created_at, id) as new from licenses`.execute(
    db,
  );
  await sql`create unique index temp.license_rowids_old on license_rowids (old)`.execute(db);
  await sql`update licenses
    set rowid = ${below} - (select new from license_rowids where old = licenses.rowid)`.execute(db);
  await sql`update licenses set rowid = ${below} - rowid`.execute(db);
  await sql`drop table temp.license_rowids`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("readiness_probe").ifExists().execute();
}
