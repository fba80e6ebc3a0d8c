import { type Kysely, SqliteAdapter, sql } from "kysely";
import type { DB } from "./schema.js";

/**
 * SQLite keeps what ANALYZE learns in sqlite_stat1 (row counts per index) and, because
 * better-sqlite3 builds it with SQLITE_ENABLE_STAT4, in sqlite_stat4 (samples of index values).
 * With samples present, the planner looks at the value bound to every parameter compared with an
 * indexed column, so each such statement is re-prepared every time it runs with a new value:
 * Shipkey's cached statements would pay their whole parse and plan on every request (measured:
 * a license read 15–25 → 75–115 µs, docs/performance.md, session 9). The samples buy nothing
 * here, as every hot query is an equality on a unique index. Shipkey never runs ANALYZE, but an
 * operator's ANALYZE or `PRAGMA optimize` writes them, so a server start removes them again.
 * sqlite_stat1 does not cause this and is kept.
 */
export type ValueSampleCleanup = "none" | "removed";

/** Removes sqlite_stat4's samples, if any, and reloads the statistics on this connection. */
export async function removeValueSamples(db: Kysely<DB>): Promise<ValueSampleCleanup> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return "none";
  const { rows } = await sql<{ found: number }>`
    select 1 as found from sqlite_schema where type = 'table' and name = 'sqlite_stat4'`.execute(
    db,
  );
  if (rows.length === 0) return "none";
  const samples = await sql<{ found: number }>`select 1 as found from sqlite_stat4 limit 1`.execute(
    db,
  );
  if (samples.rows.length === 0) return "none";
  await sql`delete from sqlite_stat4`.execute(db);
  // ANALYZE of the schema table alone is SQLite's way to reload the statistics it planned with.
  await sql`analyze sqlite_schema`.execute(db);
  return "removed";
}
