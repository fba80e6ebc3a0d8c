import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import { refreshStaleStatistics, statisticsCheckMs } from "../db/statistics.js";
import type { DatabaseFaults } from "./database-faults.js";

/**
 * PostgreSQL: once a minute, analyzes the hot table whose rows changed most since its last
 * analyze, if enough did (db/statistics.ts), so a database filled after the start keeps fast
 * plans with or without autovacuum. On a timer that does not keep the process alive; close waits
 * for a run in progress.
 */
export function scheduleStatisticsRefresh(
  app: FastifyInstance,
  db: Kysely<DB>,
  faults: DatabaseFaults,
  everyMs = statisticsCheckMs,
): void {
  let running: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(async () => {
      try {
        const table = await refreshStaleStatistics(db);
        if (table) app.log.info({ table }, "refreshed planner statistics");
      } catch (err) {
        if (!faults.reportIfUnavailable(err, "refreshing planner statistics")) {
          app.log.error({ err }, "refreshing planner statistics failed; will retry");
        }
      }
    });
  }, everyMs);
  timer.unref();
  app.addHook("onClose", async () => {
    clearInterval(timer);
    await running;
  });
}
