import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import { prune } from "../domain/maintenance/prune.js";
import type { DatabaseFaults } from "./database-faults.js";

export interface PruningOptions {
  /** See config.ts ACTIVATION_HISTORY_DAYS. */
  activationHistoryMs: number;
  /** Time between runs; the first runs when the app is ready. */
  everyMs?: number;
}

export const defaultPruneEveryMs = 60 * 60_000;

/**
 * Runs prune (domain/maintenance) when the app is ready and then on a timer that does not keep
 * the process alive; a failed run is logged and the next one tries again. Close waits for a run
 * in progress, so the database is never closed under it.
 */
export function schedulePruning(
  app: FastifyInstance,
  db: Kysely<DB>,
  faults: DatabaseFaults,
  options: PruningOptions,
): void {
  let running: Promise<void> = Promise.resolve();
  const run = () => {
    running = running.then(async () => {
      try {
        const counts = await prune(db, { activationHistoryMs: options.activationHistoryMs });
        if (Object.values(counts).some((deleted) => deleted > 0)) {
          app.log.info(counts, "pruned old rows");
        }
      } catch (err) {
        if (!faults.reportIfUnavailable(err, "pruning old rows")) {
          app.log.error({ err }, "pruning old rows failed; will retry");
        }
      }
    });
  };
  const timer = setInterval(run, options.everyMs ?? defaultPruneEveryMs);
  timer.unref();
  app.addHook("onReady", async () => run());
  app.addHook("onClose", async () => {
    clearInterval(timer);
    await running;
  });
}
