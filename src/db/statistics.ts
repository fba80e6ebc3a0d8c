import { type Kysely, SqliteAdapter, sql } from "kysely";
import type { DB } from "./schema.js";

/** The tables the license endpoints and publish read on every request. */
const hotTables = ["products", "licenses", "activations", "release_versions", "release_artifacts"];

/**
 * Gives the planner statistics for every hot table that has rows but no column statistics (never
 * analyzed, or analyzed while empty). Without them PostgreSQL may plan validate's activation check as a scan of every
 * active activation of the license: a license with 1,000 machines then validated ten times
 * slower. Autovacuum keeps them current afterwards (README); SQLite's plans do not depend on them.
 * `force` analyzes every hot table (after migrations). Answers the tables analyzed.
 */
export async function analyzeHotTables(db: Kysely<DB>, force = false): Promise<string[]> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  const analyzed: string[] = [];
  for (const table of hotTables) {
    if (!force && (await hasStatistics(db, table, sqlite))) continue;
    if (!force && !(await hasRows(db, table))) continue;
    await sql`analyze ${sql.id(table)}`.execute(db);
    analyzed.push(table);
  }
  // SQLite's ANALYZE also keeps value samples (sqlite_stat4); with them SQLite re-plans every
  // statement that compares an indexed column with a bound value, at every run (the license
  // reads went from ~15 to ~80 µs). Its row counts (sqlite_stat1) are all the planner needs.
  if (sqlite && analyzed.length > 0 && (await hasTable(db, "sqlite_stat4"))) {
    await db.transaction().execute(async (trx) => {
      await sql`delete from sqlite_stat4`.execute(trx);
      // ANALYZE of the schema table alone is SQLite's documented way to reload the statistics.
      await sql`analyze sqlite_schema`.execute(trx);
    });
  }
  return analyzed;
}

async function hasStatistics(db: Kysely<DB>, table: string, sqlite: boolean): Promise<boolean> {
  const { rows } = sqlite
    ? await sql`select 1 from sqlite_schema s join sqlite_stat1 t on t.tbl = s.name
        where s.name = ${table} and t.stat not like '0%'`
        .execute(db)
        .catch(() => ({ rows: [] })) // no sqlite_stat1 yet: never analyzed
    : await sql`select 1 from pg_stats
        where schemaname = current_schema() and tablename = ${table} limit 1`.execute(db);
  return rows.length > 0;
}

async function hasRows(db: Kysely<DB>, table: string): Promise<boolean> {
  const { rows } = await sql`select 1 from ${sql.id(table)} limit 1`.execute(db);
  return rows.length > 0;
}

async function hasTable(db: Kysely<DB>, name: string): Promise<boolean> {
  const { rows } =
    await sql`select 1 from sqlite_schema where type = 'table' and name = ${name}`.execute(db);
  return rows.length > 0;
}
