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
import { sqliteBusyTimeoutMs } from "./database.js";
import type { DB } from "./schema.js";

// Migrations are imported statically (not read from a folder at run time) so the compiled
// service and the tests run exactly the same list, in this order.
const migrations: Record<string, Migration> = {
  "0001_initial": initial,
  "0002_admin": admin,
  "0003_admins": admins,
  "0004_activation_sightings": activationSightings,
  "0005_machine_sightings": machineSightings,
  "0006_active_machine_list": activeMachineList,
  "0007_last_seen_log_file": lastSeenLogFile,
  "0008_license_slots": licenseSlots,
};

export class MigrationError extends Error {
  override name = "MigrationError";
}

/** Brings the schema to the latest version; throws MigrationError if any step fails. */
export function migrateToLatest(db: Kysely<DB>): Promise<MigrationResultSet> {
  return migrate(db, async (migrator) => {
    // Most starts, and every CLI command, find this version's migrations and no other: they
    // read and stop, taking no write lock (and working on a read-only file). Anything else goes
    // through the Migrator: pending migrations (two processes that both find some take turns in
    // its transaction, the second then finds nothing left), or one this version does not know
    // (a newer version migrated the file), which the Migrator refuses.
    const executed = await sql<{ name: string }>`select name from kysely_migration`
      .execute(db)
      .then(
        ({ rows }) => rows.map((row) => row.name).sort(),
        () => null, // no such table yet: a fresh database
      );
    const names = Object.keys(migrations).sort();
    if (executed?.length === names.length && executed.every((name, i) => name === names[i])) {
      return { results: [] };
    }
    return waitingLongForTheWriteLock(db, () => migrator.migrateToLatest());
  });
}

/** Brings the schema to the named version (tests of an upgrade); throws like migrateToLatest. */
export function migrateTo(db: Kysely<DB>, name: string): Promise<MigrationResultSet> {
  return migrate(db, (migrator) => waitingLongForTheWriteLock(db, () => migrator.migrateTo(name)));
}

async function migrate(
  db: Kysely<DB>,
  step: (migrator: Migrator) => Promise<MigrationResultSet>,
): Promise<MigrationResultSet> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
  });
  const result = await step(migrator);
  if (result.error) {
    const failed = result.results?.find((r) => r.status === "Error")?.migrationName;
    const reason = result.error instanceof Error ? result.error.message : String(result.error);
    throw new MigrationError(
      failed ? `migration ${failed} failed: ${reason}` : `cannot migrate the database: ${reason}`,
    );
  }
  return result;
}

/**
 * How long a process waits for another one's migration on the same SQLite file. Pending
 * migrations run in one BEGIN IMMEDIATE transaction (database.ts), so a process that starts
 * meanwhile with migrations pending waits for the write lock (synchronously: it is not serving
 * yet). On a large database an upgrade can take minutes (0006 rewrites every license with an
 * active machine), and the usual 5 s wait would make every other process fail its start and be
 * restarted until the first one is done.
 */
export const sqliteMigrationWaitMs = 10 * 60_000;

async function waitingLongForTheWriteLock<T>(db: Kysely<DB>, run: () => Promise<T>): Promise<T> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return run();
  const { rows } = await sql<{ timeout: number }>`pragma busy_timeout`.execute(db);
  const usual = rows[0]?.timeout ?? sqliteBusyTimeoutMs;
  await sql`pragma busy_timeout = ${sql.lit(sqliteMigrationWaitMs)}`.execute(db);
  try {
    return await run();
  } finally {
    await sql`pragma busy_timeout = ${sql.lit(usual)}`.execute(db);
  }
}
