import BetterSqlite3 from "better-sqlite3";
import type { BackgroundWorker, SqlStep, SqlValue } from "./sqlite-background-worker.js";
import type { SqliteWriteGate } from "./sqlite-write-gate.js";

/**
 * Validate's last-seen times on the SQLite server: appended to a log, then folded into
 * activations.last_seen_at now and then, all on the background thread.
 *
 * Why (measured, docs/performance.md): updating last_seen_at in place dirties one random page of
 * activations per validate. At 1 M licenses (1.5 M activations, ~225 MB) that cost ~45 us per
 * validate, against ~10 us at 10 000, and was the whole gap between the two sizes. An append
 * touches the log's last page: ~3 us at any size. A fold reads the log once and then, when it
 * holds many activations, walks activations in rowid order, so each page is written once per
 * fold however many of its rows were seen.
 *
 * The log is a SQLite file of its own beside the database (`lastSeenLogPath`), attached to the
 * thread's connection only. In WAL mode a commit to a database empties the page cache of every
 * other connection to it; while the log lived in the main file, the thread's appends (twenty a
 * second under load) emptied the event loop's cache as often, so validate read its B-tree pages
 * from the OS again and again (docs/performance-history.md, session 7). Appends and discards now commit
 * to the log's file alone: they take no lock on the main database and need no turn at the gate.
 * Only the fold's updates of activations write to the main file.
 *
 * A sighting names the machine (license id, machine id), not its activation: validate then only
 * asks whether the machine is active. The fold gives each sighting to the machine's activation
 * that is active at fold time; one that ended in between keeps the last-seen it had (at most a
 * minute older).
 *
 * Visible effect: activations.last_seen_at (admin API, dashboard) lags validate by at most
 * `foldEveryMs` plus the fold's own time. A crash loses nothing that was appended: the next fold,
 * by this process or the next, takes it. Folding is idempotent (a time only moves forward), so a
 * fold cut short, or one whose discard of the log did not commit, is simply done again. Losing
 * the log file itself (a backup without it) loses the last-seen times waiting in it: the last
 * minute's, or more while folds fail (up to `maxUnfolded` per process). The fold's updates and
 * its discard commit to two files; an OS crash or power loss (synchronous=NORMAL, as for the
 * database) may keep the discard and lose the updates, and with them one fold's last-seen times.
 */
export const foldEveryMs = 60_000;
/** Fold sooner when this many sightings wait, to bound the log's size (~50 MB). */
export const foldAtPending = 1_000_000;
/**
 * If folds keep failing, the log would grow on disk without end: past this many sightings
 * appended by this process and not folded, appends fail (like any failed write: the last-seen
 * buffer keeps them, bounded, and retries) until a fold gets through.
 */
export const maxUnfolded = 3 * foldAtPending;

/**
 * Work per step, each one short transaction, so the event loop's own writes wait little for the
 * thread (SqliteWriteGate): ~5-20 ms each at 1 M licenses (docs/performance.md). Tests shrink
 * them to cross chunk boundaries with little data.
 */
export interface FoldChunks {
  append: number;
  aggregate: number;
  scan: number;
  byKey: number;
  discard: number;
}
/**
 * A machine seen on a license at a time (epoch ms), with its activation's id where validate read
 * it (PostgreSQL; the log does not use it).
 */
export type Sighting = [
  licenseId: string,
  machineId: string,
  seenAt: number,
  activationId?: string | null,
];

const defaultChunks: FoldChunks = {
  append: 1000,
  aggregate: 10_000,
  scan: 5000,
  byKey: 1000,
  discard: 20_000,
};
/**
 * Walking all of activations costs ~2 us a row; updating one activation found through the index
 * ~45 us at 1 M. Below one seen activation in 20 the fold looks them up instead of walking.
 */
const sparseBelow = 1 / 20;

/** The log's file: the database's path with this suffix, beside its -wal and -shm files. */
export function lastSeenLogPath(databasePath: string): string {
  return `${databasePath}-last-seen`;
}

/**
 * Creates the log's file if it is not there yet, in WAL mode (appends from several processes
 * then never wait for a reader). On the caller's thread, before the background thread starts:
 * that thread opens the database without permission to create files, and an ATTACH inherits it.
 */
export function createLastSeenLog(logPath: string, busyTimeoutMs: number): void {
  try {
    const log = new BetterSqlite3(logPath);
    try {
      log.pragma(`busy_timeout = ${busyTimeoutMs}`);
      log.pragma("journal_mode = WAL");
      // Never reused (AUTOINCREMENT): a fold deletes exactly the sightings it read.
      log.exec(`create table if not exists machine_sightings (
        seq integer primary key autoincrement, license_id text not null,
        machine_id text not null, seen_at integer not null)`);
      // SQLite opens a file it may not write read-only, without a word: take the write lock once
      // so that a read-only log fails here, at start, rather than every append later.
      log.exec("begin immediate; rollback");
    } finally {
      log.close();
    }
  } catch (err) {
    throw new Error(
      `cannot open the last-seen log ${logPath}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
}

/**
 * What the background thread runs on its connection at start (sqlite-background-worker.ts):
 * attach the log, with the main database's durability (synchronous=NORMAL in WAL mode: a crash
 * of the process loses no commit) and a small page cache.
 */
export function lastSeenLogSetup(logPath: string): SqlStep[] {
  return [
    { sql: "attach database ? as seen_log", params: [logPath] },
    { sql: "pragma seen_log.synchronous = normal" },
    // Appends touch the log's last pages and a fold reads it once in order: a page cache of its
    // own as large as the database's (16 MiB) would only add to the server's RSS (~10 MiB, seen).
    { sql: "pragma seen_log.cache_size = -2048" },
  ];
}

/** A count to write into SQL text: a positive integer, or the caller's mistake. */
function literalCount(n: number): string {
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`not a positive integer: ${n}`);
  return String(n);
}

const sql = {
  append:
    "insert into seen_log.machine_sightings (license_id, machine_id, seen_at) values (?, ?, ?)",
  bounds: "select min(seq) as low, max(seq) as high from seen_log.machine_sightings",
  activationRows: "select coalesce(max(rowid), 0) as n from activations",
  prepareFold: `create temp table if not exists last_seen_fold (license_id text not null,
    machine_id text not null, seen_at integer not null, primary key (license_id, machine_id))
    without rowid`,
  clearFold: "delete from temp.last_seen_fold",
  // The WHERE also keeps SQLite from reading ON CONFLICT as part of the SELECT.
  aggregate: `insert into temp.last_seen_fold (license_id, machine_id, seen_at)
    select license_id, machine_id, max(seen_at) from seen_log.machine_sightings
    where seq between ? and ?
    group by license_id, machine_id
    on conflict (license_id, machine_id) do update set seen_at = max(seen_at, excluded.seen_at)`,
  foldCount: "select count(*) as n from temp.last_seen_fold",
  // A sighting goes to the machine's activation that is active at fold time.
  applyRange: `update activations set last_seen_at = f.seen_at from temp.last_seen_fold as f
    where activations.rowid between ? and ? and activations.deactivated_at is null
      and f.license_id = activations.license_id and f.machine_id = activations.machine_id
      and f.seen_at > activations.last_seen_at`,
  // The chunk size is written into the SQL, not bound: SQLite re-prepares a statement each time a
  // bound LIMIT is given a value (docs/performance-history.md, session 9). Statements are cached by text,
  // and one log's chunk size never changes, so each is prepared once.
  applyKeys: (chunk: number) => `update activations set last_seen_at = f.seen_at
    from (select license_id, machine_id, seen_at from temp.last_seen_fold
          where (license_id, machine_id) > (?, ?) order by license_id, machine_id
          limit ${literalCount(chunk)}) as f
    where activations.license_id = f.license_id and activations.machine_id = f.machine_id
      and activations.deactivated_at is null and f.seen_at > activations.last_seen_at`,
  lastKey: (chunk: number) => `select license_id, machine_id from (select license_id, machine_id
      from temp.last_seen_fold where (license_id, machine_id) > (?, ?)
      order by license_id, machine_id limit ${literalCount(chunk)})
    order by license_id desc, machine_id desc limit 1`,
  discard: "delete from seen_log.machine_sightings where seq between ? and ?",
} as const;

export class SqliteLastSeenLog {
  #folding: Promise<void> | null = null;
  /** A fold asked for while one runs: it starts when that one ends, shared by all who asked. */
  #nextFold: Promise<void> | null = null;
  /** Appended by this process since its last fold began; unknown (null) until the first fold. */
  #pending: number | null = null;
  #lastFoldAt = 0;

  constructor(
    private readonly worker: BackgroundWorker,
    private readonly gate: SqliteWriteGate,
    private readonly chunks: FoldChunks = defaultChunks,
    /** Tests lower it; maxUnfolded otherwise. */
    private readonly unfoldedLimit = maxUnfolded,
  ) {}

  /** Appends sightings, in chunks (each a short transaction on the log's file alone). */
  async append(sightings: Sighting[]): Promise<void> {
    if ((this.#pending ?? 0) + sightings.length > this.unfoldedLimit) {
      throw new Error(
        `last-seen log holds ${this.#pending} unfolded sightings: appends wait for a fold`,
      );
    }
    for (let i = 0; i < sightings.length; i += this.chunks.append) {
      const rows = sightings
        .slice(i, i + this.chunks.append)
        .map(([licenseId, machineId, seenAt]) => [licenseId, machineId, seenAt]);
      await this.#logWrite([{ sql: sql.append, rows }]);
      this.#pending = (this.#pending ?? 0) + rows.length;
    }
  }

  /** Folds when the last fold is `foldEveryMs` old and something waits, or much waits. */
  foldIfDue(now = Date.now()): Promise<void> {
    const pending = this.#pending;
    const due =
      pending === null ||
      pending >= foldAtPending ||
      (pending > 0 && now - this.#lastFoldAt >= foldEveryMs);
    return due ? this.fold() : Promise.resolve();
  }

  /** Folds what this process appended, if anything (on close). */
  foldPending(): Promise<void> {
    return (this.#pending ?? 0) > 0 ? this.fold() : Promise.resolve();
  }

  /**
   * Folds every sighting appended before the call (by any process). A fold already running may
   * have read the log before the caller's last append, so the call then waits for the fold after
   * it; callers meanwhile share that one.
   */
  fold(): Promise<void> {
    if (this.#folding === null) {
      this.#folding = this.#fold().finally(() => {
        this.#folding = null;
      });
      return this.#folding;
    }
    this.#nextFold ??= this.#folding
      .catch(() => {})
      .then(() => {
        this.#nextFold = null;
        return this.fold();
      });
    return this.#nextFold;
  }

  async #fold(): Promise<void> {
    this.#lastFoldAt = Date.now();
    const pendingBefore = this.#pending ?? 0;
    const [bounds, activations] = await this.#read([
      { sql: sql.prepareFold },
      { sql: sql.clearFold },
      { sql: sql.bounds, get: true },
      { sql: sql.activationRows, get: true },
    ]).then((r) => [r[2], r[3]]);
    const low = numberOr(bounds?.low, 0);
    const high = numberOr(bounds?.high, 0);
    if (high === 0) {
      this.#pending = 0;
      return;
    }
    for (const range of ranges(low, high, this.chunks.aggregate)) {
      await this.#read([{ sql: sql.aggregate, params: range }]);
    }
    const [count] = await this.#read([{ sql: sql.foldCount, get: true }]);
    const seen = numberOr(count?.n, 0);
    const rows = numberOr(activations?.n, 0);
    if (seen < rows * sparseBelow) await this.#applyByKey();
    else await this.#applyByRange(rows);
    for (const range of ranges(low, high, this.chunks.discard)) {
      await this.#logWrite([{ sql: sql.discard, params: range }]);
    }
    await this.#read([{ sql: sql.clearFold }]);
    // What this process appended while the fold ran is still waiting.
    this.#pending = Math.max(0, (this.#pending ?? 0) - pendingBefore);
  }

  async #applyByRange(rows: number): Promise<void> {
    // Rows inserted since `rows` was read are newer than every sighting in this fold; the last
    // range is open all the same, in case rowids moved (a VACUUM) while the fold ran.
    for (const [from, to] of ranges(1, rows, this.chunks.scan)) {
      const upTo = to === rows ? Number.MAX_SAFE_INTEGER : to;
      await this.#write([{ sql: sql.applyRange, params: [from, upTo] }]);
    }
  }

  async #applyByKey(): Promise<void> {
    let after: [string, string] = ["", ""];
    for (;;) {
      const chunk = this.chunks.byKey;
      const [, last] = await this.#write([
        { sql: sql.applyKeys(chunk), params: after },
        { sql: sql.lastKey(chunk), params: after, get: true },
      ]);
      const licenseId = last?.row?.license_id;
      const machineId = last?.row?.machine_id;
      if (typeof licenseId !== "string" || typeof machineId !== "string") return;
      after = [licenseId, machineId];
    }
  }

  /** Reads, and writes to the thread's TEMP tables: no write lock, so no turn at the gate. */
  async #read(steps: SqlStep[]): Promise<Array<Record<string, SqlValue> | undefined>> {
    return (await this.worker.execute(steps)).map((r) => r.row);
  }

  /**
   * Writes to the main database, after a turn at the gate. Every such step starts with an UPDATE
   * of activations, which takes the database's read and write locks at once (no older snapshot to
   * upgrade, which could fail with SQLITE_BUSY_SNAPSHOT) and leaves the log unlocked. (BEGIN
   * IMMEDIATE, used until session 7, also took the attached log's write lock, and then held the
   * database's while waiting for another process's append.)
   */
  #write(steps: SqlStep[]) {
    return this.gate.run(() => this.worker.execute(steps));
  }

  /**
   * Writes to the log's file only: the first statement writes the log, so the transaction takes
   * the log's write lock alone (waiting for another process's append under busy_timeout), and
   * needs no turn at the gate.
   */
  #logWrite(steps: SqlStep[]) {
    return this.worker.execute(steps);
  }
}

/** [from, to] ranges of at most `size` covering low..high, both ends included. */
function* ranges(low: number, high: number, size: number): Generator<[number, number]> {
  for (let from = low; from <= high; from += size) yield [from, Math.min(from + size - 1, high)];
}

function numberOr(value: SqlValue | undefined, fallback: number): number {
  return typeof value === "number" ? value : fallback;
}
