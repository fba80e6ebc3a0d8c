import { type Kysely, sql } from "kysely";
import { createMachineSightings } from "./0005_machine_sightings.js";

/**
 * The SQLite server's last-seen log moves out of the database into a file of its own
 * (src/db/sqlite-last-seen-log.ts, which creates it): its appends, twenty commits a second under
 * load, emptied the page cache of every other connection to the database, the event loop's
 * included (docs/performance-history.md, session 7). PostgreSQL never used the table.
 *
 * Sightings a server of the previous version left in machine_sightings are applied first, each to
 * the machine's active activation, so upgrading with that server stopped (README) loses none; one
 * still running would fail its later appends and folds ("no such table").
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
