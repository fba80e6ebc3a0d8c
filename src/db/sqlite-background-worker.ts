import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { boundLimitInSql } from "./compiled-query.js";

/**
 * The server's SQLite background thread, with its own connection: it checkpoints the WAL and
 * writes validate's buffered last-seen times, so the event loop does neither.
 *
 * Checkpoints (profiled, docs/performance.md): with SQLite's default automatic checkpoint, the
 * commit that crosses 1000 WAL pages copies them and fsyncs, synchronously, on the event loop:
 * about a tenth of the CPU of activate/deactivate, and a stall for every request waiting
 * meanwhile. A PASSIVE checkpoint here waits for no reader or writer and blocks none. Durability
 * is unchanged: a commit is durable once it is in the WAL. The main connection keeps a far higher
 * automatic-checkpoint threshold as a safety net, so the WAL stays bounded even if this stops.
 *
 * Last-seen (sqlite-last-seen-log.ts): a flush of a second's worth of validates took 100-250 ms
 * at 100 000 licenses and up to 500 ms at 1 M when it ran on the event loop, during which the
 * server answered nobody. Here it runs beside the event loop: appends to the log, a file of its
 * own attached to this thread's connection only, and folds of the log into the database, in
 * chunks that take turns with the main thread's writes (SqliteWriteGate).
 */
export const checkpointIntervalMs = 100;
export const safetyNetCheckpointPages = 20_000;

export type SqlValue = string | number | bigint | null;

/** One statement for the thread: run once with `params`, or once per entry of `rows`. */
export interface SqlStep {
  sql: string;
  params?: SqlValue[];
  rows?: SqlValue[][];
  /** Return the first row (run once only). */
  get?: boolean;
}

export interface StepResult {
  changes: number;
  row?: Record<string, SqlValue>;
}

export interface BackgroundWorker {
  /** False once stopped (then callers write another way); true while a thread is restarting. */
  readonly alive: boolean;
  /**
   * Runs the steps on the thread's own connection in one deferred transaction: it takes a
   * database's locks when a step first reads or writes it, so a transaction whose first step
   * writes takes that database's write lock at once, and no other's. Statements are prepared on
   * first use and kept.
   */
  execute(steps: SqlStep[]): Promise<StepResult[]>;
  stop(): Promise<void>;
}

// Plain CommonJS run with `eval`, so the same code works from src/ (tests) and dist/. It knows no
// SQL of its own: callers send it (sqlite-last-seen-log.ts), so the typed code stays in TypeScript.
const workerSource = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
for (const step of workerData.init) {
  try {
    db.prepare(step.sql).run(...(step.params || []));
  } catch (err) {
    throw new Error("setting up (" + step.sql + "): " + (err && err.message ? err.message : err));
  }
}
const statements = new Map();
// A bound LIMIT or OFFSET makes SQLite re-prepare the statement at every run: counts go into the
// SQL text. The pattern is compiled-query.ts's, which refuses them on the event loop.
const boundLimit = new RegExp(workerData.boundLimit.source, workerData.boundLimit.flags);
function statement(sql) {
  let s = statements.get(sql);
  if (!s) {
    if (boundLimit.test(sql)) {
      throw new Error("a bound LIMIT/OFFSET re-prepares at every run; write the count into the SQL: " + sql);
    }
    s = db.prepare(sql);
    statements.set(sql, s);
  }
  return s;
}
const runSteps = db.transaction((steps) =>
  steps.map((step) => {
    const s = statement(step.sql);
    if (step.rows) {
      let changes = 0;
      for (const row of step.rows) changes += s.run(...row).changes;
      return { changes };
    }
    if (step.get) return { changes: 0, row: s.get(...(step.params || [])) };
    return { changes: s.run(...(step.params || [])).changes };
  }),
);
const timer = setInterval(() => {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message ? err.message : err) });
  }
}, workerData.intervalMs);
parentPort.on("message", (message) => {
  if (message && message.type === "execute") {
    try {
      const results = runSteps(message.steps);
      parentPort.postMessage({ done: message.id, results });
    } catch (err) {
      parentPort.postMessage({ done: message.id, failed: String(err && err.message ? err.message : err) });
    }
    return;
  }
  if (message !== "stop") return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/** Test seam: ends the current thread as a crash would (the supervisor then starts another). */
export const crashThreadForTest = Symbol("crash the current thread");

export interface SupervisedBackgroundWorker extends BackgroundWorker {
  /** Threads started after one stopped unexpectedly. */
  readonly restarts: number;
  [crashThreadForTest](): Promise<void>;
}

/** Restarts wait this long, doubling up to `maxRestartDelayMs` while threads keep dying young. */
const firstRestartDelayMs = 1000;
const maxRestartDelayMs = 60_000;
/** A thread that ran this long resets the delay: its end was not a failure to start. */
const healthyAfterMs = 10_000;

/**
 * Starts the thread and keeps one running until `stop()`: a thread that ends unexpectedly (a
 * fault in the driver, memory) is reported and replaced, so that checkpoints and last-seen writes
 * go on beside the event loop rather than falling back onto it. Calls made while no thread runs
 * fail at once, as a failed write would: the last-seen buffer keeps what it could not write for
 * its next flush, and a fold is retried at the next tick.
 */
export function startBackgroundWorker(
  path: string,
  onError: (message: string) => void,
  options: {
    restartDelayMs?: number;
    /**
     * Run once on each thread's connection before anything else, outside any transaction
     * (pragmas, ATTACH): a replacement thread needs them again.
     */
    init?: SqlStep[];
    /**
     * Run on the caller's thread before each thread starts (files the thread's connection needs
     * and may not create). If it throws, the first start throws; a replacement is retried later.
     */
    beforeStart?: () => void;
  } = {},
): SupervisedBackgroundWorker {
  let thread: Thread | null = null;
  let stopping = false;
  let restarts = 0;
  let delayMs = options.restartDelayMs ?? firstRestartDelayMs;
  let restartTimer: NodeJS.Timeout | undefined;
  let stopped: Promise<void> = Promise.resolve();

  const restartLater = (startedAt: number, why: string) => {
    // The first replacement waits the base delay; each one that also dies young doubles it.
    const wait =
      Date.now() - startedAt >= healthyAfterMs
        ? (options.restartDelayMs ?? firstRestartDelayMs)
        : delayMs;
    delayMs = Math.min(wait * 2, maxRestartDelayMs);
    onError(`${why}; starting another in ${wait} ms`);
    restartTimer = setTimeout(() => {
      restarts++;
      const attemptAt = Date.now();
      try {
        start();
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        restartLater(attemptAt, `SQLite background thread not started: ${reason}`);
      }
    }, wait);
    // Never the reason the process stays alive.
    restartTimer.unref();
  };

  const start = () => {
    options.beforeStart?.();
    const startedAt = Date.now();
    const started = startThread(path, options.init ?? [], onError);
    thread = started;
    stopped = started.exited.then(() => {
      if (thread === started) thread = null;
      if (!stopping) restartLater(startedAt, "SQLite background thread stopped");
    });
  };
  start();

  return {
    get alive() {
      return !stopping;
    },
    get restarts() {
      return restarts;
    },
    execute(steps) {
      if (thread === null) return Promise.reject(new Error("background worker restarting"));
      return thread.execute(steps);
    },
    async stop() {
      stopping = true;
      clearTimeout(restartTimer);
      await thread?.stop();
      await stopped;
    },
    async [crashThreadForTest]() {
      await thread?.terminate();
    },
  };
}

interface Thread {
  execute(steps: SqlStep[]): Promise<StepResult[]>;
  stop(): Promise<void>;
  terminate(): Promise<void>;
  /** Resolves when the thread has ended, however it ended. */
  exited: Promise<void>;
}

function startThread(path: string, init: SqlStep[], onError: (message: string) => void): Thread {
  const worker = new Worker(workerSource, {
    eval: true,
    workerData: {
      path,
      init,
      intervalMs: checkpointIntervalMs,
      driver: createRequire(import.meta.url).resolve("better-sqlite3"),
      boundLimit: { source: boundLimitInSql.source, flags: boundLimitInSql.flags },
    },
  });
  // Never the reason the process stays alive.
  worker.unref();
  const waiting = new Map<
    number,
    { resolve: (results: StepResult[]) => void; reject: (err: Error) => void }
  >();
  let lastId = 0;
  worker.on(
    "message",
    (message: { error?: string; done?: number; failed?: string; results?: StepResult[] }) => {
      if (message.error !== undefined) onError(`background checkpoint failed: ${message.error}`);
      if (message.done === undefined) return;
      const caller = waiting.get(message.done);
      waiting.delete(message.done);
      if (message.failed === undefined) caller?.resolve(message.results ?? []);
      else caller?.reject(new Error(`background statement failed: ${message.failed}`));
    },
  );
  // An error from the worker's thread may arrive as a plain object (a SqliteError's code only).
  worker.on("error", (err: Partial<Error> & { code?: string }) =>
    onError(`SQLite background thread failed: ${err.message ?? err.code ?? String(err)}`),
  );
  let alive = true;
  const exited = new Promise<void>((resolve) =>
    worker.once("exit", () => {
      alive = false;
      for (const caller of waiting.values()) caller.reject(new Error("background worker exited"));
      waiting.clear();
      resolve();
    }),
  );
  return {
    exited,
    execute(steps) {
      return new Promise((resolve, reject) => {
        if (!alive) {
          reject(new Error("background worker exited"));
          return;
        }
        const id = ++lastId;
        waiting.set(id, { resolve, reject });
        worker.postMessage({ type: "execute", id, steps });
      });
    },
    async stop() {
      if (!alive) return;
      worker.postMessage("stop");
      const timeout = setTimeout(() => void worker.terminate(), 5000);
      await exited;
      clearTimeout(timeout);
    },
    async terminate() {
      await worker.terminate();
    },
  };
}
