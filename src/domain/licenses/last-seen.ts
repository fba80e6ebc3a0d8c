import { type Kysely, sql } from "kysely";
import { inTransaction } from "../../db/in-transaction.js";
import type { DB } from "../../db/schema.js";
import type { Sighting } from "../../db/sqlite-last-seen-log.js";

/**
 * While writes keep failing (a full disk, an unreachable database), sightings would pile up here
 * without end: one per validate, ~200 bytes each, enough to run a busy server out of memory
 * within minutes. Past this many waiting (~20 MB; a flush in progress holds up to as many again),
 * only each machine's latest sighting is kept, which loses nothing; if more machines than half of
 * it still wait, the oldest are dropped, and those machines keep an older last-seen until they
 * validate again.
 */
export const maxPendingSightings = 100_000;

/**
 * Validate is the hottest path and its only write is last-seen, which no endpoint returns. It is
 * buffered here and written in batches by `flush`, which the app runs every second and on
 * shutdown. A crash of the process loses at most the last-seen updates recorded since the
 * previous flush; nothing else is deferred.
 *
 * Recording appends the sighting and nothing more (validate pays for it on every request: a
 * map keyed by machine cost ~1 µs there, profiled). The SQLite server's log takes every sighting
 * and its fold keeps the latest per machine; writing in place keeps only each machine's latest
 * first (`latestPerMachine`), once per flush.
 */
export class LastSeenBuffer {
  #pending: Sighting[] = [];
  #flushing: Promise<void> | null = null;
  readonly #maxPending: number;

  /**
   * `oneTransaction` (SQLite): a flush commits once, so each page it touches is written to the
   * WAL once rather than once per statement (measured: ~5 us less server CPU per validate under
   * load). SQLite has one writer at a time anyway. On PostgreSQL each statement commits on its
   * own, keeping row locks short so that processes flushing overlapping sets cannot deadlock.
   */
  constructor(
    private readonly options: {
      oneTransaction: boolean;
      /** A faster writer when there is one (Database.lastSeenWriter: SQLite's background thread). */
      writer?: () => ((sightings: Sighting[]) => Promise<void>) | null;
      /** Tests lower it; maxPendingSightings otherwise. */
      maxPending?: number;
      /** Hears how many machines' sightings were dropped to stay under the bound. */
      onDropped?: (machines: number) => void;
    } = { oneTransaction: false },
  ) {
    this.#maxPending = options.maxPending ?? maxPendingSightings;
  }

  /** The machine was seen at `at` on the license: its active activation's last-seen moves there. */
  record(
    licenseId: string,
    machineId: string,
    at: number,
    activationId: string | null = null,
  ): void {
    this.#pending.push([licenseId, machineId, at, activationId]);
    if (this.#pending.length > this.#maxPending) this.#shed();
  }

  /** Brings the waiting sightings under the bound: each machine's latest, then the newest half. */
  #shed(): void {
    const latest = latestPerMachine(this.#pending);
    const keep = Math.floor(this.#maxPending / 2);
    if (latest.length > keep) {
      latest.sort((a, b) => b[2] - a[2]);
      this.options.onDropped?.(latest.length - keep);
      latest.length = keep;
    }
    this.#pending = latest;
  }

  /** Sightings recorded and not written yet. */
  get size(): number {
    return this.#pending.length;
  }

  /** Writes everything recorded so far. Concurrent calls share one flush. */
  flush(db: Kysely<DB>): Promise<void> {
    this.#flushing ??= this.#write(db).finally(() => {
      this.#flushing = null;
    });
    return this.#flushing;
  }

  // Loops until the buffer is empty: a flush() called while this one runs shares its promise,
  // so what was recorded meanwhile must be written before it resolves (shutdown relies on it).
  async #write(db: Kysely<DB>): Promise<void> {
    while (this.#pending.length > 0) {
      const entries = this.#pending;
      this.#pending = [];
      const writer = this.options.writer?.() ?? null;
      try {
        if (writer) {
          await writer(entries);
        } else {
          const latest = latestPerMachine(entries);
          const writeAll = async (target: Kysely<DB>) => {
            for (let i = 0; i < latest.length; i += batchSize) {
              await writeBatch(target, latest.slice(i, i + batchSize));
            }
          };
          await (this.options.oneTransaction ? inTransaction(db, writeAll) : writeAll(db));
        }
      } catch (err) {
        // Put everything back for the next flush. Rewriting a time that did get written is
        // harmless: a time only moves forward.
        this.#pending = entries.concat(this.#pending);
        if (this.#pending.length > this.#maxPending) this.#shed();
        throw err;
      }
    }
  }
}

const batchSize = 200;

/** Each machine's latest sighting (with the activation id it carried, if any), once. */
function latestPerMachine(sightings: Sighting[]): Sighting[] {
  // NUL cannot occur in a machine id (refused at parsing) nor in a record id.
  const latest = new Map<string, Sighting>();
  for (const sighting of sightings) {
    const key = `${sighting[0]}\u0000${sighting[1]}`;
    const previous = latest.get(key);
    if (previous === undefined || sighting[2] > previous[2]) latest.set(key, sighting);
  }
  return [...latest.values()];
}

// One UPDATE per batch, joined to the batch as a VALUES list (portable across SQLite and
// PostgreSQL; both name its columns column1, column2...). A sighting that carries its
// activation's id (PostgreSQL) finds it by primary key: measured 20 % more validates per second
// on PostgreSQL than through the (license, machine) index. Otherwise the machine's active
// activation is found through the partial unique index. A time only moves forward, so a flush
// racing another process's never sets an older one. The casts keep PostgreSQL from typing the
// values as text.
async function writeBatch(db: Kysely<DB>, batch: Sighting[]): Promise<void> {
  const byId = batch.filter((s) => s[3] != null);
  const byMachine = batch.filter((s) => s[3] == null);
  if (byId.length > 0) {
    const rows = sql.join(
      byId.map(
        ([, , at, activationId]) =>
          sql`(cast(${activationId} as varchar(64)), cast(${at} as bigint))`,
      ),
    );
    await sql`update activations set last_seen_at = seen.column2
      from (values ${rows}) as seen
      where activations.id = seen.column1 and activations.last_seen_at < seen.column2`.execute(db);
  }
  if (byMachine.length > 0) {
    const rows = sql.join(
      byMachine.map(
        ([licenseId, machineId, at]) =>
          sql`(cast(${licenseId} as varchar(64)), cast(${machineId} as varchar(255)), cast(${at} as bigint))`,
      ),
    );
    await sql`update activations set last_seen_at = seen.column3
      from (values ${rows}) as seen
      where activations.license_id = seen.column1 and activations.machine_id = seen.column2
        and activations.deactivated_at is null and activations.last_seen_at < seen.column3`.execute(
      db,
    );
  }
}
