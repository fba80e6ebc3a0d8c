import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { Kysely, PostgresDialect, sql } from "kysely";
import { kyselyPool } from "./pg-pool.js";
import type { DB } from "./schema.js";
import { type Checkpointer, safetyNetPages, startCheckpointer } from "./sqlite-checkpointer.js";
import { SqliteDialect, SqliteKysely } from "./sqlite-driver.js";

export type Dialect = "sqlite" | "postgres";

export interface Database {
  db: Kysely<DB>;
  dialect: Dialect;
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

export interface OpenOptions {
  /** PostgreSQL pool size (default 10). A request that finds every connection busy waits. */
  poolSize?: number;
  /**
   * SQLite file: copy the WAL into the database from a thread of its own
   * (sqlite-checkpointer.ts); the server's setting. Failures are reported here.
   */
  backgroundCheckpoints?: { onError(message: string): void };
}

/** How long a SQLite statement waits for another connection's write lock before failing. */
export const sqliteBusyTimeoutMs = 5000;

export async function openDatabase(url: string, options: OpenOptions = {}): Promise<Database> {
  const target = parseDatabaseUrl(url);
  if (target.dialect === "sqlite") return openSqlite(target.path, options.backgroundCheckpoints);
  return openPostgres(target.connectionString, options.poolSize ?? 10);
}

/** Waits for the database to answer, retrying until `timeoutMs` has passed (then throws). */
export async function waitForDatabase(
  database: Database,
  timeoutMs: number,
  onRetry: (err: unknown, attempt: number) => void,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      await sql`select 1`.execute(database.db);
      return;
    } catch (err) {
      if (Date.now() >= deadline) throw err;
      onRetry(err, attempt);
      const delay = Math.min(250 * 2 ** (attempt - 1), 2000, Math.max(deadline - Date.now(), 0));
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/**
 * Switches the file to WAL (kept in the file: later opens find it so). While another process
 * opens the same fresh file, SQLite may answer SQLITE_BUSY at once, without the busy timeout:
 * this retries for as long as that timeout. It runs once per open, before anything else can
 * run, so the few milliseconds of a synchronous wait block nothing.
 */
function useWal(sqlite: BetterSqlite3.Database): void {
  const deadline = Date.now() + sqliteBusyTimeoutMs;
  for (;;) {
    try {
      sqlite.pragma("journal_mode = WAL");
      return;
    } catch (err) {
      if ((err as { code?: unknown }).code !== "SQLITE_BUSY" || Date.now() >= deadline) throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
}

function openSqlite(path: string, checkpoints: OpenOptions["backgroundCheckpoints"]): Database {
  if (path !== ":memory:") makePrivate(path);
  const sqlite = new BetterSqlite3(path);
  // WAL: readers never block the writer. synchronous=NORMAL in WAL mode keeps every committed
  // transaction across a crash of the process (kill -9); only an OS crash or power loss can
  // roll back the most recent commits. busy_timeout lets the CLI write while the server runs.
  sqlite.pragma(`busy_timeout = ${sqliteBusyTimeoutMs}`);
  useWal(sqlite);
  sqlite.pragma("synchronous = NORMAL");
  sqlite.pragma("foreign_keys = ON");
  let checkpointer: Checkpointer | null = null;
  if (checkpoints && path !== ":memory:") {
    sqlite.pragma(`wal_autocheckpoint = ${safetyNetPages}`);
    checkpointer = startCheckpointer(path, sqliteBusyTimeoutMs, checkpoints.onError);
  }
  const db = new SqliteKysely<DB>({ dialect: new SqliteDialect(sqlite) });
  return {
    db,
    dialect: "sqlite",
    close: async () => {
      await checkpointer?.stop();
      await db.destroy();
    },
  };
}

/**
 * The database holds license keys, customer data and password hashes: its directory is created
 * 0700 and its file 0600 (SQLite gives its -wal and -shm files the database file's mode). An
 * existing file is narrowed to 0600 where this process may change it.
 */
function makePrivate(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  if (!existsSync(path)) closeSync(openSync(path, "a", 0o600));
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      chmodSync(file, 0o600);
    } catch {
      // Missing, or owned by someone else: SQLite reports what matters when it opens it.
    }
  }
}

// pg is loaded only for a PostgreSQL database: a SQLite service and the CLI start without it.
async function openPostgres(connectionString: string, poolSize: number): Promise<Database> {
  const { default: pg } = await import("pg");
  // BIGINT (oid 20) comes back from pg as a string by default; our bigints are epoch
  // milliseconds and byte counts, all within Number.MAX_SAFE_INTEGER.
  const pgTypes = {
    getTypeParser: ((oid: number, format?: "text" | "binary") =>
      oid === pg.types.builtins.INT8
        ? (value: string) => Number.parseInt(value, 10)
        : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
  };
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    types: pgTypes,
    // A server that stops answering (a partition, a frozen host) fails requests with 503 instead
    // of holding them: connecting gives up after 5 s, a query after 30 s without an answer, and
    // TCP keepalive notices a dead peer on an idle connection.
    connectionTimeoutMillis: 5000,
    query_timeout: 30_000,
    keepAlive: true,
  });
  // A connection lost while idle in the pool, or while lent to a request (a server restart,
  // 57P01), is reported as an 'error' event; unheard, it would crash the process. The request's
  // query fails on its own, and pg-pool discards the broken client when it comes back.
  pool.on("error", () => {});
  pool.on("connect", (client) => client.on("error", () => {}));
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: kyselyPool(pool) }) });
  return { db, dialect: "postgres", close: () => db.destroy() };
}
