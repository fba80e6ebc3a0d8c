import { type Kysely, SqliteAdapter, sql } from "kysely";
import { licenseSlotFunction } from "../sqlite-license-slot.js";

/**
 * SQLite: every license row moves to its key's slot, the rowid the license endpoints look at
 * first (src/db/sqlite-license-slot.ts). The function is registered on every connection Shipkey
 * opens. A row whose slot another row holds stays where it is (OR IGNORE) and is found through
 * the key index, as before. Moving a row rewrites its entries in the table and in the licenses'
 * three indexes: about a minute per million licenses (docs/performance.md).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return;
  const slot = sql.raw(`${licenseSlotFunction}(license_key)`);
  await sql`update or ignore licenses set rowid = ${slot} where rowid <> ${slot}`.execute(db);
}

/** Nothing to undo: the previous version finds rows by key wherever they are. */
export async function down(): Promise<void> {}
