import type { CompiledQuery, Kysely } from "kysely";
import type { ReadExecutor } from "./compiled-query.js";
import type { DB } from "./schema.js";
import type { SqliteStatement, SqliteStatements } from "./sqlite-statement.js";
import { TickQueue } from "./tick-queue.js";

/**
 * Runs the license endpoints' point reads on SQLite in batches: every read requested while the
 * event loop handles one round of socket events runs back to back in the next check phase
 * (setImmediate), synchronously, inside one read transaction.
 *
 * Why (profiled, docs/performance.md): the same query costs about 12 µs in a loop but about 35 µs
 * when each one runs between the HTTP work of its own request, because that work evicts SQLite's
 * B-tree pages from the CPU caches. Back to back, the pages stay cached; one read transaction per
 * batch also takes SQLite's WAL read lock once instead of once per query.
 *
 * Correctness: the batch holds Kysely's connection (its mutex) while it runs, so it never reads
 * inside another caller's open transaction and never sees uncommitted rows. Every read starts
 * after the request asked for it, so it sees everything committed before then, by this process or
 * any other.
 */
export class SqliteReadBatch implements ReadExecutor {
  readonly #queue = new TickQueue<PendingRead>(() => this.#drain());
  readonly #begin: SqliteStatement;
  readonly #commit: SqliteStatement;
  readonly #rollback: SqliteStatement;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly sqlite: SqliteStatements,
  ) {
    this.#begin = sqlite.prepare("begin");
    this.#commit = sqlite.prepare("commit");
    this.#rollback = sqlite.prepare("rollback");
  }

  read<Row>(query: CompiledQuery<Row>): Promise<Row[]> {
    return new Promise<Row[]>((resolve, reject) => {
      this.#queue.push({ query, resolve: resolve as (rows: unknown[]) => void, reject });
    });
  }

  #drain(): void {
    const batch = this.#queue.take();
    this.db
      .connection()
      .execute(async () => this.#run(batch))
      .catch((err: unknown) => {
        for (const pending of batch) pending.reject(err);
      });
  }

  /** Runs synchronously from first read to commit: nothing else can use the connection meanwhile. */
  #run(batch: PendingRead[]): void {
    const inTransaction = batch.length > 1;
    if (inTransaction) this.#begin.run([]);
    try {
      for (const pending of batch) {
        try {
          const statement = this.sqlite.prepare(pending.query.sql);
          // `readonly`, not `reader`: an UPDATE … RETURNING returns rows too.
          if (!statement.readonly) throw new Error("SqliteReadBatch runs read-only statements");
          pending.resolve(allAsObjects(statement, pending.query.parameters));
        } catch (err) {
          pending.reject(err);
        }
      }
    } finally {
      if (inTransaction) this.#end();
    }
  }

  // Every read is answered by now. A read-only transaction has nothing to lose by rolling back,
  // and the connection must not stay inside it.
  #end(): void {
    try {
      this.#commit.run([]);
    } catch {
      this.#rollback.run([]);
    }
  }
}

const columnNames = new WeakMap<SqliteStatement, string[]>();

/**
 * statement.all(), with the row objects built here from raw rows: better-sqlite3 builds each
 * object through V8's C++ API, property by property, which cost more than the JS literal does
 * (measured: ~1 us of a ~10 us point read). The statement goes back to object mode at once; it is
 * shared with Kysely through the statement cache.
 */
function allAsObjects(statement: SqliteStatement, parameters: readonly unknown[]): unknown[] {
  statement.raw(true);
  let rows: unknown[][];
  try {
    rows = statement.all(parameters) as unknown[][];
  } finally {
    statement.raw(false);
  }
  let names = columnNames.get(statement);
  // SQLite re-prepares a statement whose tables changed; a different column count means a new
  // shape (a `select *` after a migration by another process), so read the names again.
  if (names === undefined || (rows[0] !== undefined && rows[0].length !== names.length)) {
    names = statement.columns().map((column) => column.name);
    columnNames.set(statement, names);
  }
  const columns = names;
  return rows.map((values) => {
    const row: Record<string, unknown> = {};
    columns.forEach((name, i) => {
      row[name] = values[i];
    });
    return row;
  });
}

interface PendingRead {
  query: CompiledQuery;
  resolve: (rows: unknown[]) => void;
  reject: (err: unknown) => void;
}
