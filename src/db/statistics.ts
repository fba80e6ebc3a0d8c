import { type Kysely, SqliteAdapter, sql } from "kysely";
import { inTransaction } from "./transaction.js";
import type { DB } from "./schema.js";

/** The tables the license endpoints and publish read on every request. */
const hotTables = ["products", "licenses", "activations", "release_versions", "release_artifacts"];

/**
 * PostgreSQL: gives the planner statistics for every hot table that has rows but no column
 * statistics (never analyzed, or analyzed while empty). Without them PostgreSQL may plan
 * validate's activation check as a scan of every active activation of the license: a license
 * with 1,000 machines then validated ten times slower. Autovacuum keeps them current afterwards
 * (README). `force` analyzes every hot table (after migrations). Answers the tables analyzed.
 *
 * SQLite: removes statistics instead. Without them SQLite assumes large tables and uses the
 * indexes, which is right for every query here; statistics taken while a table was small (any
 * new install) make it scan that table inside joins and subqueries, and SQLite never refreshes
 * them by itself: a product's feed with 5,000 versions took 4 s a request that way, 3 ms
 * without. Answers [].
 */
export async function analyzeHotTables(db: Kysely<DB>, force = false): Promise<string[]> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) {
    await forgetSqliteStatistics(db);
    return [];
  }
  const analyzed: string[] = [];
  for (const table of hotTables) {
    if (!force && (await hasStatistics(db, table))) continue;
    if (!force && !(await hasRows(db, table))) continue;
    await sql`analyze ${sql.id(table)}`.execute(db);
    analyzed.push(table);
  }
  return analyzed;
}

/** How often the service looks for stale statistics (PostgreSQL): at most one ANALYZE per run. */
export const statisticsCheckMs = 60_000;

/**
 * PostgreSQL: analyzes the hot table whose rows changed most since its last analyze, when that
 * is more than 500 rows plus 10 % of the table (autovacuum's own threshold, a little higher), so
 * the plans stay right as the tables grow even where autovacuum is off. One table per call,
 * found from pg_stat_user_tables (no scan). Answers the table analyzed, or null. SQLite: null.
 */
export async function refreshStaleStatistics(db: Kysely<DB>): Promise<string | null> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) return null;
  const { rows } = await sql<{ relname: string }>`
    select relname from pg_stat_user_tables
    where schemaname = current_schema()
      and relname in (${sql.join(hotTables)})
      and n_mod_since_analyze > 500 + 0.1 * n_live_tup
    order by n_mod_since_analyze desc
    limit 1`.execute(db);
  const table = rows[0]?.relname;
  if (table === undefined) return null;
  await sql`analyze ${sql.id(table)}`.execute(db);
  return table;
}

/** Empties sqlite_stat1 (and sqlite_stat4) where ANALYZE once filled them, and reloads. */
async function forgetSqliteStatistics(db: Kysely<DB>): Promise<void> {
  if (!(await hasTable(db, "sqlite_stat1"))) return;
  const { rows } = await sql`select 1 from sqlite_stat1 limit 1`.execute(db);
  if (rows.length === 0) return;
  await inTransaction(db, async (trx) => {
    await sql`delete from sqlite_stat1`.execute(trx);
    if (await hasTable(trx, "sqlite_stat4")) await sql`delete from sqlite_stat4`.execute(trx);
    // ANALYZE of the schema table alone is SQLite's documented way to reload the statistics.
    await sql`analyze sqlite_schema`.execute(trx);
  });
}

async function hasStatistics(db: Kysely<DB>, table: string): Promise<boolean> {
  const { rows } = await sql`select 1 from pg_stats
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
