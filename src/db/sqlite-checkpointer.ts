import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * Copies SQLite's write-ahead log back into the database file from a worker thread, so the
 * server's main thread never does it.
 *
 * Why (profiled, docs/performance.md): with SQLite's default automatic checkpoint, the commit
 * that crosses 1000 WAL pages copies them and fsyncs, synchronously, on the event loop: about a
 * tenth of the CPU of activate/deactivate, and a stall for every request waiting meanwhile. A
 * PASSIVE checkpoint on the worker's own connection waits for no reader or writer and blocks
 * none. Durability is unchanged: a commit is durable once it is in the WAL.
 *
 * The main connection keeps a far higher automatic-checkpoint threshold as a safety net, so the
 * WAL stays bounded even if this worker stops.
 */
export const checkpointIntervalMs = 100;
export const safetyNetCheckpointPages = 20_000;

export interface Checkpointer {
  stop(): Promise<void>;
}

// Plain CommonJS run with `eval`, so the same code works from src/ (tests) and dist/.
const workerSource = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
const timer = setInterval(() => {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message ? err.message : err) });
  }
}, workerData.intervalMs);
parentPort.on("message", (message) => {
  if (message !== "stop") return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export function startCheckpointer(path: string, onError: (message: string) => void): Checkpointer {
  const worker = new Worker(workerSource, {
    eval: true,
    workerData: {
      path,
      intervalMs: checkpointIntervalMs,
      driver: createRequire(import.meta.url).resolve("better-sqlite3"),
    },
  });
  // Never the reason the process stays alive.
  worker.unref();
  worker.on("message", (message: { error?: string }) => {
    if (message.error !== undefined) onError(`background checkpoint failed: ${message.error}`);
  });
  // An error from the worker's thread may arrive as a plain object (a SqliteError's code only).
  worker.on("error", (err: Partial<Error> & { code?: string }) =>
    onError(`checkpoint worker stopped: ${err.message ?? err.code ?? String(err)}`),
  );
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  return {
    async stop() {
      worker.postMessage("stop");
      const timeout = setTimeout(() => void worker.terminate(), 5000);
      await exited;
      clearTimeout(timeout);
    },
  };
}
