import { type Kysely, sql } from "kysely";
import type { DB } from "../../src/db/schema.js";

/** An activation as the last-seen tests name it: by id, and by license and machine. */
export interface Machine {
  id: string;
  licenseId: string;
  machineId: string;
}

/**
 * The activations of one license (by key), or all of them, ordered by id. Sorted here rather
 * than by the database, whose collation (PostgreSQL's) may order strings differently.
 */
export async function machinesOf(db: Kysely<DB>, licenseKey?: string): Promise<Machine[]> {
  let query = db
    .selectFrom("activations")
    .innerJoin("licenses", "licenses.id", "activations.license_id")
    .select(["activations.id", "activations.license_id", "activations.machine_id"]);
  if (licenseKey !== undefined) query = query.where("licenses.license_key", "=", licenseKey);
  return (await query.execute())
    .map((r) => ({ id: r.id, licenseId: r.license_id, machineId: r.machine_id }))
    .sort((a, b) => a.id.localeCompare(b.id));
}

/**
 * SQLite's list of active machines on each license row (migration 0006) must name exactly the
 * machines with an active activation, wherever it is kept (not NULL). Returns the licenses whose
 * list is kept and wrong, with both sides, so a failure shows what differs; [] on PostgreSQL,
 * which keeps no list.
 */
export async function activeMachineListMismatches(
  db: Kysely<DB>,
  dialect: "sqlite" | "postgres",
): Promise<Array<{ licenseId: string; list: string[]; active: string[] }>> {
  if (dialect !== "sqlite") return [];
  const rows = await sql<{
    id: string;
    list: string | null;
    active: string;
  }>`select licenses.id, licenses.active_machine_ids as list,
       (select json_group_array(machine_id) from activations
        where activations.license_id = licenses.id and activations.deactivated_at is null) as active
     from licenses`.execute(db);
  const sorted = (json: string) => (JSON.parse(json) as string[]).sort();
  return rows.rows
    .filter((row) => row.list !== null)
    .map((row) => ({
      licenseId: row.id,
      list: sorted(row.list ?? "[]"),
      active: sorted(row.active),
    }))
    .filter((row) => JSON.stringify(row.list) !== JSON.stringify(row.active));
}

/** Whether SQLite keeps the license's list of active machines (NULL: the index answers). */
export async function keepsActiveMachineList(db: Kysely<DB>, licenseKey: string): Promise<boolean> {
  const row = await sql<{ kept: number }>`select active_machine_ids is not null as kept
    from licenses where license_key = ${licenseKey}`.execute(db);
  return row.rows[0]?.kept === 1;
}
