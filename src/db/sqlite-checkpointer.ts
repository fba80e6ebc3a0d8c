import { Worker } from "node:worker_threads";

/**
 * Copies SQLite's WAL into the database file from a thread of its own (the server's, on a file),
 * so the event loop never does that copy and its fsync: a commit is durable once it is in the WAL,
 * so this moves work, not risk. SQLite's own automatic checkpoint stays on, at `safetyNetPages`,
 * in case the thread falls behind or stops.
 */
export const safetyNetPages = 10_000;

export interface Checkpointer {
  stop(): Promise<void>;
}

export function startCheckpointer(
  path: string,
  busyTimeoutMs: number,
  onError: (message: string) => void,
): Checkpointer {
  const worker = new Worker(new URL("./sqlite-checkpoint-worker.js", import.meta.url), {
    workerData: { path, busyTimeoutMs, intervalMs: 100 },
  });
  worker.on("message", (message: { error?: string }) => {
    if (message.error) onError(`WAL checkpoint failed: ${message.error}`);
  });
  worker.on("error", (err) => onError(`WAL checkpoint thread failed: ${err.message}`));
  worker.unref();
  return {
    stop: async () => {
      if (worker.threadId === -1) return;
      const exited = new Promise((resolve) => worker.once("exit", resolve));
      // Referenced again, or a process with nothing else to do would end before the thread does.
      worker.ref();
      worker.postMessage("stop");
      await exited;
    },
  };
}
