import { type Kysely, sql } from "kysely";
import { createMachineSightings } from "./0005_machine_sightings.js";

/**
 * Removes 0005's table. Times left in it are applied first, each to the machine's active
 * activation, so upgrading loses none. (Release 0.1 then kept them in a file of its own beside a
 * SQLite database; migrations/legacy-last-seen-log.ts applies and removes that file.)
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`update activations set last_seen_at = s.seen_at
    from (select license_id, machine_id, max(seen_at) as seen_at from machine_sightings
          group by license_id, machine_id) as s
    where activations.license_id = s.license_id and activations.machine_id = s.machine_id
      and activations.deactivated_at is null and s.seen_at > activations.last_seen_at`.execute(db);
  await db.schema.dropTable("machine_sightings").execute();
}

/** The table again, empty: what waits in the log file stays there (at most a minute of last-seen). */
export const down = createMachineSightings;
