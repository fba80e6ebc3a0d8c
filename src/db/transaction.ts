import type { Kysely, Transaction } from "kysely";
import type { DB } from "./schema.js";

/**
 * Runs `work` in the caller's transaction when `db` is one (so a write and its audit entry commit
 * together), else in a new one: Kysely does not nest transactions. Either way `work` is handed a
 * `Transaction<DB>`, which is what functions that must run inside one ask for.
 */
export function inTransaction<T>(
  db: Kysely<DB>,
  work: (trx: Transaction<DB>) => Promise<T>,
): Promise<T> {
  return db.isTransaction ? work(db as Transaction<DB>) : db.transaction().execute(work);
}
