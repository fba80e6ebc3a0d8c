/**
 * Makes this process's SQLite writers take turns: group-commit batches (SqliteWriteBatch) and
 * the background thread's writes to the database (the last-seen fold's updates, SqliteLastSeenLog;
 * its appends go to a file of their own). SQLite allows one writer at a time; a writer that
 * finds the lock taken waits inside better-sqlite3 (busy_timeout), which on the main thread
 * blocks the event loop. Waiting here is asynchronous instead.
 */
export class SqliteWriteGate {
  #tail: Promise<unknown> = Promise.resolve();

  run<T>(work: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(work);
    this.#tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}
