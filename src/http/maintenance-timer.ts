import type { FastifyInstance } from "fastify";
import type { DatabaseFaults } from "./database-faults.js";

/**
 * Runs `task` every `everyMs` (and once when the app is ready, if asked) on a timer that does
 * not keep the process alive, one run at a time. A failed run is logged (a database outage once
 * per fault window) and the next one tries again. Close waits for a run in progress, so the
 * database is never closed under it.
 */
export function scheduleMaintenance(
  app: FastifyInstance,
  faults: DatabaseFaults,
  what: string,
  options: { everyMs: number; onReady: boolean },
  task: () => Promise<void>,
): void {
  let running: Promise<void> = Promise.resolve();
  const run = () => {
    running = running.then(async () => {
      try {
        await task();
      } catch (err) {
        if (!faults.reportIfUnavailable(err, what)) {
          app.log.error({ err }, `${what} failed; will retry`);
        }
      }
    });
  };
  const timer = setInterval(run, options.everyMs);
  timer.unref();
  if (options.onReady) app.addHook("onReady", async () => run());
  app.addHook("onClose", async () => {
    clearInterval(timer);
    await running;
  });
}
