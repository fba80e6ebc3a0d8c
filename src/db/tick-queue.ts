/**
 * Collects work requested during one event-loop turn and calls `onTick` once, in the next check
 * phase (setImmediate), to take it all: the batching behind SqliteReadBatch, SqliteWriteBatch
 * and PostgreSQL's batched reads (pg-read-batch.ts).
 * Until `take` runs, later requests join the same batch without scheduling another call.
 */
export class TickQueue<T> {
  #items: T[] = [];
  #scheduled = false;

  constructor(private readonly onTick: () => void) {}

  push(item: T): void {
    this.#items.push(item);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.onTick);
    }
  }

  /** Everything queued so far; the next push schedules a new call. */
  take(): T[] {
    this.#scheduled = false;
    const items = this.#items;
    this.#items = [];
    return items;
  }
}
