import { parentPort, workerData } from "node:worker_threads";
import BetterSqlite3 from "better-sqlite3";

/**
 * The thread that copies SQLite's WAL into the database file (see sqlite-checkpointer.ts). It has
 * its own connection and runs a PASSIVE checkpoint every `intervalMs`: it never waits for, nor
 * blocks, the server's reads and writes.
 */
const { path, busyTimeoutMs, intervalMs } = workerData as {
  path: string;
  busyTimeoutMs: number;
  intervalMs: number;
};
const sqlite = new BetterSqlite3(path);
sqlite.pragma(`busy_timeout = ${busyTimeoutMs}`);
sqlite.pragma("synchronous = NORMAL");
const checkpoint = sqlite.prepare("pragma wal_checkpoint(PASSIVE)");

const timer = setInterval(() => {
  try {
    checkpoint.run();
  } catch (err) {
    parentPort?.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
}, intervalMs);

parentPort?.on("message", (message: unknown) => {
  if (message !== "stop") return;
  clearInterval(timer);
  sqlite.close();
  parentPort?.close();
});
