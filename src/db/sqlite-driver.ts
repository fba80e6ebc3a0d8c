import { AsyncLocalStorage } from "node:async_hooks";
import type BetterSqlite3 from "better-sqlite3";
import {
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  Kysely,
  type QueryCompiler,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type CompiledQuery,
  type Transaction,
  type TransactionBuilder,
} from "kysely";

/**
 * Kysely's dialect for Shipkey's one better-sqlite3 connection. It shares the connection so:
 * - a transaction holds it from BEGIN IMMEDIATE to COMMIT, one at a time;
 * - a write outside a transaction holds it for its one statement;
 * - a read outside a transaction waits at most until the end of the current event-loop turn,
 *   then runs with the others of that turn, back to back, in one read transaction, while no
 *   transaction holds the connection. Run together, the reads find SQLite's pages still in the
 *   CPU's caches, and take the WAL read lock once. Every read starts after it was asked for, so
 *   it sees every commit acknowledged before then, by this process or another.
 * Prepared statements are kept by SQL text (bounded): parsing SQL was an eighth of validate's CPU.
 * With SqliteKysely (below), a query or transaction on the root handle from inside a transaction's
 * callback, which would wait forever for the connection that transaction holds, throws at once.
 */
export class SqliteDialect implements Dialect {
  constructor(private readonly sqlite: BetterSqlite3.Database) {}

  createDriver(): Driver {
    return new SqliteDriver(this.sqlite);
  }

  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler();
  }

  createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }

  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new SqliteIntrospector(db);
  }
}

/**
 * SQLite's DDL is transactional (Kysely's adapter says otherwise), so the Migrator runs all
 * pending migrations in one transaction: all or nothing, and one process at a time.
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

const statementCacheSize = 256;

interface PendingRead {
  statement: BetterSqlite3.Statement;
  parameters: readonly unknown[];
  resolve: (result: QueryResult<unknown>) => void;
  reject: (err: unknown) => void;
}

/** A transaction under way, in the async context of its callback (and of the work it starts). */
interface TransactionMark {
  /** Set when the transaction begins. */
  connection: SqliteConnection | null;
  /** The transaction whose callback started this one, if any. */
  outer: TransactionMark | undefined;
}

/**
 * Enabled only while a transaction is under way: while an AsyncLocalStorage is enabled, Node
 * tracks the async context of every promise, which made a read cost a quarter more CPU time.
 */
const openTransaction = new AsyncLocalStorage<TransactionMark>();
let transactionsUnderWay = 0;

function marked<T>(work: () => Promise<T>): Promise<T> {
  const mark: TransactionMark = { connection: null, outer: openTransaction.getStore() };
  transactionsUnderWay++;
  return openTransaction.run(mark, work).finally(() => {
    if (--transactionsUnderWay === 0) openTransaction.disable();
  });
}

/**
 * Kysely over SqliteDialect: each transaction's callback runs in an async context that names the
 * transaction, so the driver refuses the root handle used from inside it.
 */
export class SqliteKysely<DB> extends Kysely<DB> {
  override transaction(): TransactionBuilder<DB> {
    const builder = super.transaction();
    const execute = builder.execute.bind(builder);
    return Object.assign(builder, {
      execute: <T>(callback: (trx: Transaction<DB>) => Promise<T>) =>
        marked(() => execute(callback)),
    });
  }
}

const rootHandleInTransaction = () =>
  new Error(
    "The root database handle was used inside a transaction, whose connection it would wait for forever: use the transaction's handle (trx) inside db.transaction().execute(async (trx) => …)",
  );

class SqliteDriver implements Driver {
  readonly #statements = new Map<string, BetterSqlite3.Statement>();
  #lockTail: Promise<void> = Promise.resolve();
  #reads: PendingRead[] = [];

  constructor(private readonly sqlite: BetterSqlite3.Database) {}

  async init(): Promise<void> {}

  // Kysely asks for a connection for each query and transaction on the root handle; a
  // transaction's own queries run on the connection it was given.
  async acquireConnection(): Promise<DatabaseConnection> {
    for (let mark = openTransaction.getStore(); mark !== undefined; mark = mark.outer) {
      if (mark.connection?.driver === this && mark.connection.release !== null) {
        throw rootHandleInTransaction();
      }
    }
    return new SqliteConnection(this);
  }

  async releaseConnection(): Promise<void> {}

  /**
   * BEGIN IMMEDIATE takes SQLite's write lock up front (waiting for it under busy_timeout).
   * Kysely's plain BEGIN takes it at the first write instead; if another process (the CLI)
   * committed after the transaction's first read, that write fails with SQLITE_BUSY_SNAPSHOT,
   * which no waiting can cure.
   */
  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const owner = connection as SqliteConnection;
    // The mark SqliteKysely.transaction() made for this transaction (none for one begun by a
    // Kysely it did not make: Migrator's db.connection()).
    const mark = openTransaction.getStore();
    if (mark !== undefined && mark.connection === null) mark.connection = owner;
    owner.release = await this.lock();
    try {
      this.run(this.prepare("begin immediate"), []);
    } catch (err) {
      this.unlock(owner);
      throw err;
    }
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    // A failed COMMIT is followed by Kysely's rollbackTransaction, which unlocks.
    this.run(this.prepare("commit"), []);
    this.unlock(connection as SqliteConnection);
  }

  // SQLite itself rolls a transaction back on some failures (SQLITE_FULL, I/O errors); a second
  // ROLLBACK would fail and hide the error that caused it.
  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      if (this.sqlite.inTransaction) this.run(this.prepare("rollback"), []);
    } finally {
      this.unlock(connection as SqliteConnection);
    }
  }

  async destroy(): Promise<void> {
    // Waits for the transaction or write in progress, and the reads of this turn.
    const release = await this.lock();
    this.sqlite.close();
    release();
  }

  prepare(text: string): BetterSqlite3.Statement {
    let statement = this.#statements.get(text);
    if (statement === undefined) {
      statement = this.sqlite.prepare(text);
      if (this.#statements.size >= statementCacheSize) {
        const oldest = this.#statements.keys().next().value;
        if (oldest !== undefined) this.#statements.delete(oldest);
      }
      this.#statements.set(text, statement);
    }
    return statement;
  }

  run(statement: BetterSqlite3.Statement, parameters: readonly unknown[]): QueryResult<unknown> {
    if (statement.reader) return { rows: statement.all(parameters) };
    const { changes, lastInsertRowid } = statement.run(parameters);
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  }

  /** Runs one statement outside any transaction: a write alone, a read with its turn's reads. */
  async execute(query: CompiledQuery): Promise<QueryResult<unknown>> {
    const statement = this.prepare(query.sql);
    if (!statement.readonly) {
      const release = await this.lock();
      try {
        return this.run(statement, query.parameters);
      } finally {
        release();
      }
    }
    return new Promise((resolve, reject) => {
      if (this.#reads.length === 0) setImmediate(() => void this.#runReads());
      this.#reads.push({ statement, parameters: query.parameters, resolve, reject });
    });
  }

  async #runReads(): Promise<void> {
    const release = await this.lock();
    const reads = this.#reads;
    this.#reads = [];
    const together = reads.length > 1 && !this.sqlite.inTransaction;
    try {
      if (together) this.run(this.prepare("begin"), []);
      for (const read of reads) {
        try {
          read.resolve(this.run(read.statement, read.parameters));
        } catch (err) {
          read.reject(err);
        }
      }
    } catch (err) {
      for (const read of reads) read.reject(err);
    } finally {
      // Every read is answered: a read-only transaction loses nothing by rolling back.
      if (together && this.sqlite.inTransaction) this.run(this.prepare("rollback"), []);
      release();
    }
  }

  /** Waits for the connection (first come, first served); resolves with its release. */
  lock(): Promise<() => void> {
    let release = (): void => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const acquired = this.#lockTail.then(() => release);
    this.#lockTail = this.#lockTail.then(() => released);
    return acquired;
  }

  private unlock(connection: SqliteConnection): void {
    connection.release?.();
    connection.release = null;
  }
}

class SqliteConnection implements DatabaseConnection {
  /** Set while this connection's transaction holds the database. */
  release: (() => void) | null = null;

  constructor(readonly driver: SqliteDriver) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.release)
      return this.driver.run(this.driver.prepare(query.sql), query.parameters) as QueryResult<R>;
    return (await this.driver.execute(query)) as QueryResult<R>;
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error("Shipkey's SQLite driver does not stream");
  }
}
