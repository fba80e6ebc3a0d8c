import { type Kysely, type Migration, type MigrationResultSet, Migrator } from "kysely";
import * as initial from "./migrations/0001_initial.js";
import * as admin from "./migrations/0002_admin.js";
import * as admins from "./migrations/0003_admins.js";
import * as activationSightings from "./migrations/0004_activation_sightings.js";
import * as machineSightings from "./migrations/0005_machine_sightings.js";
import * as activeMachineList from "./migrations/0006_active_machine_list.js";
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
};

export class MigrationError extends Error {
  override name = "MigrationError";
}

/** Brings the schema to the latest version; throws MigrationError if any step fails. */
export function migrateToLatest(db: Kysely<DB>): Promise<MigrationResultSet> {
  return migrate(db, (migrator) => migrator.migrateToLatest());
}

/** Brings the schema to the named version (tests of an upgrade); throws like migrateToLatest. */
export function migrateTo(db: Kysely<DB>, name: string): Promise<MigrationResultSet> {
  return migrate(db, (migrator) => migrator.migrateTo(name));
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
