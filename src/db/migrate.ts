import { type Kysely, type MigrationResultSet, Migrator, SqliteAdapter, sql } from "kysely";
import { migrations } from "./migrations/index.js";
import { foldLegacyLastSeenLog } from "./migrations/legacy-last-seen-log.js";
import { sqliteBusyTimeoutMs } from "./database.js";
import type { DB } from "./schema.js";
import { analyzeHotTables } from "./statistics.js";

export class MigrationError extends Error {
  override name = "MigrationError";
}

/** What migrateToLatest did: Kysely's results, and whether the database had no schema before. */
export interface MigrationOutcome extends MigrationResultSet {
  /** No `kysely_migration` table was there: a new SQLite file, or an empty PostgreSQL database. */
  fresh: boolean;
}

/**
 * Brings the schema to the latest version, then gives the planner fresh statistics if anything
 * ran; throws MigrationError if any step fails. All pending migrations run in one transaction on
 * both dialects: all or nothing, and processes starting together migrate one at a time.
 */
export async function migrateToLatest(db: Kysely<DB>): Promise<MigrationOutcome> {
  // Most starts, and every CLI command, find nothing to do: they read and stop, taking no write
  // lock (and working on a read-only file).
  const executed = await sql<{ name: string }>`select name from kysely_migration`.execute(db).then(
    ({ rows }) => rows.map((row) => row.name).sort(),
    () => null, // no such table yet: a fresh database
  );
  const names = Object.keys(migrations).sort();
  if (executed?.length === names.length && executed.every((name, i) => name === names[i])) {
    return { results: [], fresh: false };
  }
  const result = await migrate(db, async (migrator) => {
    await foldLegacyLastSeenLog(db);
    return migrator.migrateToLatest();
  });
  if ((result.results ?? []).length > 0) await analyzeHotTables(db, true);
  return { ...result, fresh: executed === null };
}

/** Brings the schema to the named version, up or down; throws like migrateToLatest. */
export function migrateTo(db: Kysely<DB>, name: string): Promise<MigrationResultSet> {
  return migrate(db, (migrator) => migrator.migrateTo(name));
}

/**
 * How long a process waits for another one's migration on the same SQLite file: a large upgrade
 * can take minutes, and the usual 5 s wait would fail every other process's start meanwhile.
 */
export const sqliteMigrationWaitMs = 10 * 60_000;

async function migrate(
  db: Kysely<DB>,
  step: (migrator: Migrator) => Promise<MigrationResultSet>,
): Promise<MigrationResultSet> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  if (sqlite) await sql`pragma busy_timeout = ${sql.lit(sqliteMigrationWaitMs)}`.execute(db);
  let result: MigrationResultSet;
  try {
    result = await step(migrator);
  } finally {
    if (sqlite) await sql`pragma busy_timeout = ${sql.lit(sqliteBusyTimeoutMs)}`.execute(db);
  }
  if (result.error) {
    const failed = result.results?.find((r) => r.status === "Error")?.migrationName;
    const reason = result.error instanceof Error ? result.error.message : String(result.error);
    throw new MigrationError(
      failed ? `migration ${failed} failed: ${reason}` : `cannot migrate the database: ${reason}`,
    );
  }
  return result;
}
