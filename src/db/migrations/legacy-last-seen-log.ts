import { existsSync, rmSync } from "node:fs";
import BetterSqlite3 from "better-sqlite3";
import { type Kysely, SqliteAdapter, sql } from "kysely";

/**
 * Release 0.1 kept validate's last-seen times on SQLite in a log file beside the database
 * (`<database>-last-seen`), folded into activations once a minute. A server stopped cleanly left
 * it folded; one killed left up to a minute of times in it. They are applied here, each to the
 * machine's active activation (a time only moves forward), and the file is removed. Runs before
 * the migrations, outside their transaction (SQLite cannot attach a file inside one).
 */
export async function foldLegacyLastSeenLog<T>(db: Kysely<T>): Promise<number> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return 0;
  const { rows } = await sql<{ file: string }>`
    select file from pragma_database_list where name = 'main'`.execute(db);
  const file = rows[0]?.file;
  if (!file) return 0; // in memory
  const logPath = `${file}-last-seen`;
  if (!existsSync(logPath)) return 0;
  const log = new BetterSqlite3(logPath);
  let sightings: Array<{ license_id: string; machine_id: string; seen_at: number }> = [];
  try {
    const table = log
      .prepare("select 1 from sqlite_schema where type = 'table' and name = 'machine_sightings'")
      .get();
    if (table) {
      sightings = log
        .prepare(
          `select license_id, machine_id, max(seen_at) as seen_at from machine_sightings
           group by license_id, machine_id`,
        )
        .all() as typeof sightings;
    }
  } finally {
    log.close();
  }
  await db.transaction().execute(async (trx) => {
    for (const s of sightings) {
      await sql`update activations set last_seen_at = ${s.seen_at}
        where license_id = ${s.license_id} and machine_id = ${s.machine_id}
          and deactivated_at is null and last_seen_at < ${s.seen_at}`.execute(trx);
    }
  });
  for (const path of [logPath, `${logPath}-wal`, `${logPath}-shm`]) rmSync(path, { force: true });
  return sightings.length;
}
