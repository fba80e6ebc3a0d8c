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
 * A write of one statement that needs no transaction of its own: on SQLite it still goes through
 * group commit, so it takes its turn with this process's other writers (SqliteWriteGate) instead
 * of waiting for the lock on the event loop; elsewhere it runs directly.
 */
export function singleWrite<T>(db: Kysely<DB>, work: (db: Kysely<DB>) => Promise<T>): Promise<T> {
  if (db.isTransaction) return work(db);
  const runner = runners.get(db);
  return runner ? runner.run(work) : work(db);
}
