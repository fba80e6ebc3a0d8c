import type { Kysely, Transaction } from "kysely";
import type { DB } from "./schema.js";

/** Runs a unit of work in a transaction of its own, or of a group of them (see openDatabase). */
export interface TransactionRunner {
  run<T>(work: (trx: Transaction<DB>) => Promise<T>): Promise<T>;
}

const runners = new WeakMap<Kysely<DB>, TransactionRunner>();

/** Makes `inTransaction` on this handle go through `runner` (SQLite: group commit). */
export function useTransactionRunner(db: Kysely<DB>, runner: TransactionRunner): void {
  runners.set(db, runner);
}

/**
 * Runs `work` in a transaction: the caller's, when `db` already is one (so a write and its audit
 * entry commit together), else a new one (Kysely cannot nest transactions). On SQLite the new
 * one may be a savepoint inside a transaction shared with other requests of the same event-loop
 * turn (SqliteWriteBatch); either way `work` commits, or fails, on its own.
 */
export function inTransaction<T>(
  db: Kysely<DB>,
  work: (trx: Transaction<DB>) => Promise<T>,
): Promise<T> {
  if (db.isTransaction) return work(db as Transaction<DB>);
  const runner = runners.get(db);
  return runner ? runner.run(work) : db.transaction().execute(work);
}

/**
 * Runs `work` in its turn with this process's other writers where they take turns (SQLite: as
 * one unit of group commit, on the connection that batch holds), else directly on `db`, where
 * each write opens its own transaction through `inTransaction` as needed. For:
 * - a write of one statement that needs no transaction of its own: on SQLite it waits for the
 *   write lock in turn (SqliteWriteGate) instead of on the event loop;
 * - reads followed by writes that need not see one snapshot but are cheaper together on SQLite,
 *   where a read inside the unit runs straight on the connection (measured: deactivate with its
 *   license read inside, activate/deactivate +4.6 % requests/s). On PostgreSQL such a read stays
 *   outside any transaction, where it runs as a named prepared statement; inside one, Kysely
 *   would send it unnamed, to be planned again (measured: −10 %).
 */
export function inWriteTurn<T>(db: Kysely<DB>, work: (db: Kysely<DB>) => Promise<T>): Promise<T> {
  if (db.isTransaction) return work(db);
  const runner = runners.get(db);
  return runner ? runner.run(work) : work(db);
}
