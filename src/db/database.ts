import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import {
  CompiledQuery,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  Kysely,
  PostgresDialect,
  SqliteAdapter,
  SqliteDialect,
  type SqliteDatabase,
  type SqliteDialectConfig,
  SqliteDriver,
} from "kysely";
import pg from "pg";
import type { DB } from "./schema.js";
import { useReadExecutor } from "./compiled-query.js";
import { PgNamedReads } from "./pg-named-reads.js";
import {
  safetyNetCheckpointPages,
  startBackgroundWorker,
  type SupervisedBackgroundWorker,
} from "./sqlite-background-worker.js";
import { SqliteWriteGate } from "./sqlite-write-gate.js";
import {
  createLastSeenLog,
  lastSeenLogPath,
  lastSeenLogSetup,
  type Sighting,
  SqliteLastSeenLog,
} from "./sqlite-last-seen-log.js";
import { registerLicenseSlotFunction } from "./sqlite-license-slot.js";
import { SqliteReadBatch } from "./sqlite-read-batch.js";
import { SqliteWriteBatch } from "./sqlite-write-batch.js";
import { useTransactionRunner } from "./in-transaction.js";

export type Dialect = "sqlite" | "postgres";

export interface Database {
  db: Kysely<DB>;
  dialect: Dialect;
  /**
   * Appends last-seen times to the log from the background thread (server on a SQLite file; see
   * sqlite-last-seen-log.ts), in chunks that take turns with this process's other writes; null
   * when there is no such thread (then the caller updates activations through Kysely).
   */
  lastSeenWriter(): ((sightings: Sighting[]) => Promise<void>) | null;
  /** Folds the last-seen log into activations now (a no-op where there is no log). */
  foldLastSeen(): Promise<void>;
  /** Folds it if it is due (sqlite-last-seen-log.ts); the server asks every second. */
  foldLastSeenIfDue(): Promise<void>;
  close(): Promise<void>;
}

export type DatabaseTarget =
  { dialect: "sqlite"; path: string } | { dialect: "postgres"; connectionString: string };

export class DatabaseUrlError extends Error {
  override name = "DatabaseUrlError";
}

/** `sqlite:<path>` (`sqlite::memory:` for tests) or `postgres://…` / `postgresql://…`. */
export function parseDatabaseUrl(url: string): DatabaseTarget {
  if (url.startsWith("sqlite:")) {
    const path = url.slice("sqlite:".length);
    if (path === "") throw new DatabaseUrlError("DATABASE_URL sqlite: needs a file path");
    return { dialect: "sqlite", path };
  }
  if (url.startsWith("postgres://") || url.startsWith("postgresql://")) {
    try {
      new URL(url);
    } catch {
      throw new DatabaseUrlError("DATABASE_URL is not a valid postgres:// URL");
    }
    return { dialect: "postgres", connectionString: url };
  }
  throw new DatabaseUrlError("DATABASE_URL must start with sqlite: or postgres://");
}

// BIGINT (oid 20) comes back from pg as a string by default; our bigints are epoch
// milliseconds and byte counts, all within Number.MAX_SAFE_INTEGER.
const pgTypes = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === pg.types.builtins.INT8
      ? (value: string) => Number.parseInt(value, 10)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

export interface OpenOptions {
  /** PostgreSQL pool size (default 10). */
  poolSize?: number;
  /**
   * SQLite file: run the background thread (sqlite-background-worker.ts) for WAL checkpoints and
   * last-seen writes; the callback hears about failures. The server turns this on; short-lived
   * users (CLI, tests) keep SQLite's automatic checkpoints and write last-seen through Kysely.
   */
  backgroundWorker?: { onError(message: string): void };
}

/** How long a SQLite statement waits for another connection's lock before failing (busy). */
export const sqliteBusyTimeoutMs = 5000;

/**
 * The server's background thread on the SQLite file at `path` (sqlite-background-worker.ts), its
 * last-seen log created first (throws if the log cannot be created or written). Its connection
 * waits for locks and makes its commits durable as the main connection does, and has the log
 * attached.
 */
export function startSqliteBackgroundThread(
  path: string,
  onError: (message: string) => void,
  options: { restartDelayMs?: number } = {},
): SupervisedBackgroundWorker {
  const logPath = lastSeenLogPath(path);
  return startBackgroundWorker(path, onError, {
    ...options,
    // Again before each replacement thread: the file may have been deleted meanwhile.
    beforeStart: () => createLastSeenLog(logPath, sqliteBusyTimeoutMs),
    init: [
      { sql: `pragma busy_timeout = ${sqliteBusyTimeoutMs}` },
      { sql: "pragma synchronous = normal" },
      ...lastSeenLogSetup(logPath),
    ],
  });
}

export async function openDatabase(url: string, options: OpenOptions = {}): Promise<Database> {
  const target = parseDatabaseUrl(url);
  if (target.dialect === "sqlite") {
    if (target.path !== ":memory:") mkdirSync(dirname(target.path), { recursive: true });
    const sqlite = new BetterSqlite3(target.path);
    // WAL: readers never block the writer. synchronous=NORMAL in WAL mode keeps every committed
    // transaction across a crash of the process (kill -9); only an OS crash or power loss can
    // roll back the most recent commits. busy_timeout lets the CLI write while the server runs.
    sqlite.pragma("journal_mode = WAL");
    sqlite.pragma("synchronous = NORMAL");
    sqlite.pragma(`busy_timeout = ${sqliteBusyTimeoutMs}`);
    sqlite.pragma("foreign_keys = ON");
    registerLicenseSlotFunction(sqlite);
    let background: SupervisedBackgroundWorker | null = null;
    if (options.backgroundWorker && target.path !== ":memory:") {
      sqlite.pragma(`wal_autocheckpoint = ${safetyNetCheckpointPages}`);
      try {
        background = startSqliteBackgroundThread(target.path, options.backgroundWorker.onError);
      } catch (err) {
        sqlite.close();
        throw err;
      }
    }
    const statements = withStatementCache(sqlite);
    const db = new Kysely<DB>({ dialect: new ImmediateSqliteDialect({ database: statements }) });
    const gate = new SqliteWriteGate();
    useReadExecutor(db, new SqliteReadBatch(db, statements));
    useTransactionRunner(db, new SqliteWriteBatch(db, gate, statements));
    const lastSeenLog = background && new SqliteLastSeenLog(background, gate);
    // The log works through the thread: once it is stopped, there is none. (A thread that dies
    // is replaced; meanwhile the log's calls fail and are retried, see startBackgroundWorker.)
    const liveLog = () => (background?.alive ? lastSeenLog : null);
    return {
      db,
      dialect: "sqlite",
      lastSeenWriter: () => {
        const log = liveLog();
        return log && ((sightings) => log.append(sightings));
      },
      foldLastSeen: async () => liveLog()?.fold(),
      foldLastSeenIfDue: async () => liveLog()?.foldIfDue(),
      close: async () => {
        // Leaves activations.last_seen_at current for whoever opens the file next (the CLI).
        const log = liveLog();
        if (log) {
          await log
            .foldPending()
            .catch((err: unknown) =>
              options.backgroundWorker?.onError(
                `last-seen fold failed: ${err instanceof Error ? err.message : String(err)}`,
              ),
            );
        }
        await background?.stop();
        await db.destroy();
      },
    };
  }
  const pool = new pg.Pool({
    connectionString: target.connectionString,
    max: options.poolSize ?? 10,
    types: pgTypes,
  });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on("error", () => {});
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  useReadExecutor(db, new PgNamedReads(pool));
  return {
    db,
    dialect: "postgres",
    lastSeenWriter: () => null,
    foldLastSeen: async () => {},
    foldLastSeenIfDue: async () => {},
    close: () => db.destroy(),
  };
}

/**
 * Kysely prepares every query anew; parsing SQL was an eighth of validate's CPU time. Our
 * queries have a fixed shape (values are bound parameters), so a small cache keyed by SQL text
 * reuses statements. Bounded, oldest evicted first. Safe because better-sqlite3 is synchronous
 * (a statement never runs twice at once) and we never stream results with iterate().
 */
export function withStatementCache(
  sqlite: BetterSqlite3.Database,
  capacity = 256,
): SqliteDatabase & { prepare(sql: string): BetterSqlite3.Statement } {
  const statements = new Map<string, BetterSqlite3.Statement>();
  return {
    close: () => sqlite.close(),
    prepare: (sql) => {
      let statement = statements.get(sql);
      if (statement === undefined) {
        statement = sqlite.prepare(sql);
        if (statements.size >= capacity) {
          const oldest = statements.keys().next().value;
          if (oldest !== undefined) statements.delete(oldest);
        }
        statements.set(sql, statement);
      }
      return statement;
    },
  };
}

/**
 * Write transactions on SQLite start with BEGIN IMMEDIATE, taking the write lock up front (waiting
 * for it under busy_timeout). Kysely's plain BEGIN takes it at the first write instead; if another
 * process (the CLI) committed after the transaction's first read, that write fails at once with
 * SQLITE_BUSY_SNAPSHOT, which no waiting can cure. Every Kysely transaction here writes, and group
 * commit (SqliteWriteBatch) makes the span from first read to first write a whole batch.
 * Read-only batches (SqliteReadBatch) keep a plain BEGIN of their own.
 */
class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;

  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config);
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}

/**
 * SQLite's DDL is transactional, but Kysely's adapter says otherwise, so its Migrator ran each
 * statement on its own and took no lock: two processes starting on a fresh file (a cluster, the
 * CLI beside the server) ran the same migration twice and one of them failed ("table already
 * exists"), and a process killed mid-migration left a schema half applied that no restart could
 * finish. Saying yes makes the Migrator run all pending migrations in one transaction, which
 * ImmediateSqliteDriver opens with BEGIN IMMEDIATE: all or nothing, and one process at a time
 * (the others wait for the write lock, then find nothing left to do).
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("begin immediate"));
  }
}
