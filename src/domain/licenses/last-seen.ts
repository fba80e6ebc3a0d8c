import { type Kysely, sql } from "kysely";
import { inTransaction } from "../../db/in-transaction.js";
import type { DB } from "../../db/schema.js";

/**
 * Validate is the hottest path and its only write is last-seen, which no endpoint returns. It is
 * buffered here (latest time per activation) and written in batches by `flush`, which the app
 * runs every second and on shutdown. A crash of the process loses at most the last-seen updates
 * recorded since the previous flush; nothing else is deferred.
 */
export class LastSeenBuffer {
  readonly #pending = new Map<string, number>();
  #flushing: Promise<void> | null = null;

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
      writer?: () => ((entries: Array<[string, number]>) => Promise<void>) | null;
    } = { oneTransaction: false },
  ) {}

  record(activationId: string, at: number): void {
    const previous = this.#pending.get(activationId);
    if (previous === undefined || at > previous) this.#pending.set(activationId, at);
  }

  get size(): number {
    return this.#pending.size;
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
    while (this.#pending.size > 0) {
      const entries = [...this.#pending];
      this.#pending.clear();
      const writeAll = async (target: Kysely<DB>) => {
        for (let i = 0; i < entries.length; i += batchSize) {
          await writeBatch(target, entries.slice(i, i + batchSize));
        }
      };
      const writer = this.options.writer?.() ?? null;
      try {
        if (writer) await writer(entries);
        else await (this.options.oneTransaction ? inTransaction(db, writeAll) : writeAll(db));
      } catch (err) {
        // Put everything back (unless newer times arrived meanwhile) for the next flush.
        // Rewriting a time that did get written is harmless.
        for (const [id, at] of entries) this.record(id, at);
        throw err;
      }
    }
  }
}

const batchSize = 200;

// One UPDATE per batch: SET last_seen_at = CASE id WHEN ? THEN ? ... END WHERE id IN (...).
// Portable across SQLite and PostgreSQL; the cast keeps PostgreSQL from typing the values as text.
async function writeBatch(db: Kysely<DB>, batch: Array<[string, number]>): Promise<void> {
  const cases = sql.join(
    batch.map(([id, at]) => sql`when ${id} then cast(${at} as bigint)`),
    sql` `,
  );
  await db
    .updateTable("activations")
    .set({ last_seen_at: sql<number>`case id ${cases} end` })
    .where(
      "id",
      "in",
      batch.map(([id]) => id),
    )
    .execute();
}
