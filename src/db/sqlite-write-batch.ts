import { type CompiledQuery, type Kysely, type QueryResult, sql, type Transaction } from "kysely";
import { type ConnectionExecutor, useConnectionExecutor } from "./compiled-query.js";
import type { DB } from "./schema.js";
import type { SqliteStatement, SqliteStatements } from "./sqlite-statement.js";
import type { SqliteWriteGate } from "./sqlite-write-gate.js";
import { TickQueue } from "./tick-queue.js";

/**
 * Group commit for SQLite: the write transactions requested during one event-loop turn run one
 * after another inside a single SQLite transaction, each in a savepoint of its own, and commit
 * once. Nobody is answered before that commit.
 *
 * Why (docs/performance.md): each commit pays for its WAL frames, the WAL index and file locks,
 * and, like the reads (see SqliteReadBatch), a write interleaved with HTTP work finds its B-tree
 * pages evicted from the CPU caches.
 *
 * Each unit of work sees the writes of the units before it in the batch, exactly as it would
 * see them committed if they had run one by one; SQLite has a single writer either way. A unit
 * that throws is rolled back to its savepoint and fails alone. If the commit itself fails, every
 * unit of the batch fails and nothing of it is kept.
 */
export class SqliteWriteBatch {
  readonly #queue = new TickQueue<PendingWrite>(() => void this.#drain());

  readonly #savepoint: SqliteStatement;
  readonly #release: SqliteStatement;
  readonly #direct: ConnectionExecutor;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly gate: SqliteWriteGate,
    sqlite: SqliteStatements,
  ) {
    this.#direct = sqliteConnectionExecutor(sqlite);
    this.#savepoint = sqlite.prepare("savepoint unit");
    this.#release = sqlite.prepare("release unit");
  }

  run<T>(work: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  // The queue is taken when the gate opens, so units arriving while it waits join this batch.
  #drain(): Promise<void> {
    return this.gate.run(() => this.#commitBatch(this.#queue.take()));
  }

  async #commitBatch(batch: PendingWrite[]): Promise<void> {
    let trx;
    try {
      trx = await this.db.startTransaction().execute();
    } catch (err) {
      for (const pending of batch) pending.reject(err);
      return;
    }
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    try {
      useConnectionExecutor(trx, this.#direct);
      for (const pending of batch) {
        // The batch's transaction holds the connection, so the savepoint statements run on it
        // directly: through Kysely, each cost a query build and a transaction object per unit.
        this.#savepoint.run([]);
        try {
          const value = await pending.work(trx);
          this.#release.run([]);
          outcomes.push({ ok: true, value });
        } catch (error) {
          // Through Kysely's queue, so a query of the unit already queued there runs first and is
          // undone with the rest. A unit must still await every query it starts: one started
          // after it failed would land outside its savepoint (true of any savepoint on a shared
          // connection, and of the Kysely savepoint API used before).
          await sql`rollback to unit`.execute(trx);
          await sql`release unit`.execute(trx);
          outcomes.push({ ok: false, error });
        }
      }
      await trx.commit().execute();
    } catch (err) {
      // The transaction itself failed (savepoint, commit): nothing of the batch is kept.
      await trx
        .rollback()
        .execute()
        .catch(() => {});
      for (const pending of batch) pending.reject(err);
      return;
    } finally {
      // A handle kept past the batch must not reach the connection directly any more.
      useConnectionExecutor(trx, null);
    }
    batch.forEach((pending, i) => {
      const outcome = outcomes[i];
      if (outcome?.ok) pending.resolve(outcome.value);
      else pending.reject(outcome?.error);
    });
  }
}

interface PendingWrite {
  work: (trx: Transaction<DB>) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** Runs a compiled query on the connection as Kysely's SQLite driver does, with the same result. */
function sqliteConnectionExecutor(sqlite: SqliteStatements): ConnectionExecutor {
  return {
    execute<Row>(query: CompiledQuery<Row>): QueryResult<Row> {
      const statement = sqlite.prepare(query.sql);
      if (statement.reader) return { rows: statement.all(query.parameters) as Row[] };
      const { changes, lastInsertRowid } = statement.run(query.parameters);
      return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
    },
  };
}
