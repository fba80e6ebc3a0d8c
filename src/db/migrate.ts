import {
  type Kysely,
  type Migration,
  type MigrationResultSet,
  Migrator,
  SqliteAdapter,
  sql,
} from "kysely";
import * as initial from "./migrations/0001_initial.js";
import * as admin from "./migrations/0002_admin.js";
import * as admins from "./migrations/0003_admins.js";
import * as activationSightings from "./migrations/0004_activation_sightings.js";
import * as machineSightings from "./migrations/0005_machine_sightings.js";
import * as activeMachineList from "./migrations/0006_active_machine_list.js";
import * as lastSeenLogFile from "./migrations/0007_last_seen_log_file.js";
import * as licenseSlots from "./migrations/0008_license_slots.js";
import * as plainStorage from "./migrations/0009_plain_storage.js";
import * as idempotencyAndRetention from "./migrations/0010_idempotency_and_retention.js";
import * as updateFeeds from "./migrations/0011_update_feeds.js";
import * as signingKeys from "./migrations/0013_signing_keys.js";
import { foldLegacyLastSeenLog } from "./migrations/legacy-last-seen-log.js";
import { sqliteBusyTimeoutMs } from "./database.js";
import type { DB } from "./schema.js";
import { analyzeHotTables } from "./statistics.js";

// Imported statically (not read from a folder at run time) so the compiled service and the
// tests run exactly the same list, in this order.
const migrations: Record<string, Migration> = {
  "0001_initial": initial,
  "0002_admin": admin,
  "0003_admins": admins,
  "0004_activation_sightings": activationSightings,
  "0005_machine_sightings": machineSightings,
  "0006_active_machine_list": activeMachineList,
  "0007_last_seen_log_file": lastSeenLogFile,
  "0008_license_slots": licenseSlots,
  "0009_plain_storage": plainStorage,
  "0010_idempotency_and_retention": idempotencyAndRetention,
  "0011_update_feeds": updateFeeds,
  "0013_signing_keys": signingKeys,
};

export class MigrationError extends Error {
  override name = "MigrationError";
}

/**
 * Brings the schema to the latest version, then gives the planner fresh statistics if anything
 * ran; throws MigrationError if any step fails. All pending migrations run in one transaction on
 * both dialects: all or nothing, and processes starting together migrate one at a time.
 */
export async function migrateToLatest(db: Kysely<DB>): Promise<MigrationResultSet> {
  // Most starts, and every CLI command, find nothing to do: they read and stop, taking no write
  // lock (and working on a read-only file).
  const executed = await sql<{ name: string }>`select name from kysely_migration`.execute(db).then(
    ({ rows }) => rows.map((row) => row.name).sort(),
    () => null, // no such table yet: a fresh database
  );
  const names = Object.keys(migrations).sort();
  if (executed?.length === names.length && executed.every((name, i) => name === names[i])) {
    return { results: [] };
  }
  const result = await migrate(db, async (migrator) => {
    await foldLegacyLastSeenLog(db);
    return migrator.migrateToLatest();
  });
  if ((result.results ?? []).length > 0) await analyzeHotTables(db, true);
  return result;
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
