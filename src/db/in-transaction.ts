import type { Kysely, Transaction } from "kysely";
import type { DB } from "./schema.js";

/**
 * Runs `work` in a transaction: the caller's, when `db` already is one (so a write and its audit
 * entry commit together), else a new one. Kysely cannot nest transactions.
 */
export function inTransaction<T>(
  db: Kysely<DB>,
  work: (trx: Transaction<DB>) => Promise<T>,
): Promise<T> {
  return db.isTransaction ? work(db as Transaction<DB>) : db.transaction().execute(work);
}
