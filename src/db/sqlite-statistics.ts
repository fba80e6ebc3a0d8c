import { type Kysely, SqliteAdapter, sql } from "kysely";
import type { DB } from "./schema.js";

export type ValueSampleCleanup = "none" | "removed";

/**
 * Removes ANALYZE's value samples (sqlite_stat4), if any, and reloads the statistics on this
 * connection; the server does it at every start.
 *
 * Why: better-sqlite3 builds SQLite with SQLITE_ENABLE_STAT4. With samples present, the planner
 * looks at the value bound to every parameter compared with an indexed column, so each such
 * statement is re-prepared every time it runs with a new value, and Shipkey's cached statements
 * pay their whole parse and plan on every request (measured: a license read 13–27 → 75–114 µs,
 * docs/performance-history.md, session 9). No hot query gains from them: each is an equality on a unique
 * index. Shipkey never runs ANALYZE, but an operator's ANALYZE or `PRAGMA optimize` writes them.
 * sqlite_stat1 (row counts per index) does not cause this and is kept.
 *
 * The rows are deleted and the empty table kept, not dropped: a later ANALYZE into an existing
 * table changes no schema, so running servers keep the statistics they loaded and are not slowed
 * before their next start removes the samples again. A DROP would make that ANALYZE recreate the
 * table, a schema change that every running server would pick up at once.
 */
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
  // One transaction: if the reload fails, the samples stay in the file too, and the next start
  // tries again and says so, instead of a clean file and a connection still planning with them.
  await db.transaction().execute(async (trx) => {
    await sql`delete from sqlite_stat4`.execute(trx);
    // ANALYZE of the schema table alone is SQLite's documented way to reload the statistics.
    await sql`analyze sqlite_schema`.execute(trx);
  });
  return "removed";
}
