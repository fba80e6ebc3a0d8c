import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import { refreshStaleStatistics, statisticsCheckMs } from "../db/statistics.js";
import type { DatabaseFaults } from "./database-faults.js";
import { scheduleMaintenance } from "./maintenance-timer.js";

/**
 * PostgreSQL: once a minute, analyzes the hot table whose rows changed most since its last
 * analyze, if enough did (db/statistics.ts), so a database filled after the start keeps fast
 * plans with or without autovacuum.
 */
export function scheduleStatisticsRefresh(
  app: FastifyInstance,
  db: Kysely<DB>,
  faults: DatabaseFaults,
  everyMs = statisticsCheckMs,
): void {
  scheduleMaintenance(
    app,
    faults,
    "refreshing planner statistics",
    { everyMs, onReady: false },
    async () => {
      const table = await refreshStaleStatistics(db);
      if (table) app.log.info({ table }, "refreshed planner statistics");
    },
  );
}
