import type { Kysely } from "kysely";
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
