import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import { expireMachineLeases } from "../actions/machines.js";
import { remindExpiringLicenses } from "../actions/emails.js";
import { prune } from "../domain/maintenance/prune.js";
import type { DatabaseFaults } from "./database-faults.js";
import { scheduleMaintenance } from "./maintenance-timer.js";

export interface PruningOptions {
  /** See config.ts ACTIVATION_HISTORY_DAYS. */
  activationHistoryMs: number;
  /** See config.ts WEBHOOKS_RETENTION_DAYS. */
  webhookRetentionMs?: number;
  /** See config.ts INTEGRATION_EVENT_BODY_DAYS. */
  integrationEventBodyMs?: number;
  /** See config.ts EMAIL_RETENTION_DAYS. */
  emailRetentionMs?: number;
  /** Time between runs; the first runs when the app is ready. */
  everyMs?: number;
  /** Time between the machine lease sweeps (every 5 minutes by default). */
  leaseSweepEveryMs?: number;
}

export const defaultPruneEveryMs = 60 * 60_000;
export const defaultLeaseSweepEveryMs = 5 * 60_000;

/**
 * Runs prune (domain/maintenance) and the e-mail expiry reminders (actions/emails.ts) when the
 * app is ready and then every hour (everyMs), and the machine lease sweep (actions/machines.ts)
 * when ready and every 5 minutes.
 */
export function schedulePruning(
  app: FastifyInstance,
  db: Kysely<DB>,
  faults: DatabaseFaults,
  options: PruningOptions,
): void {
  scheduleMaintenance(
    app,
    faults,
    "pruning old rows",
    { everyMs: options.everyMs ?? defaultPruneEveryMs, onReady: true },
    async () => {
      const counts = await prune(db, {
        activationHistoryMs: options.activationHistoryMs,
        ...(options.webhookRetentionMs === undefined
          ? {}
          : { webhookRetentionMs: options.webhookRetentionMs }),
        ...(options.integrationEventBodyMs === undefined
          ? {}
          : { integrationEventBodyMs: options.integrationEventBodyMs }),
        ...(options.emailRetentionMs === undefined
          ? {}
          : { emailRetentionMs: options.emailRetentionMs }),
      });
      if (Object.values(counts).some((deleted) => deleted > 0)) {
        app.log.info(counts, "pruned old rows");
      }
    },
  );
  scheduleMaintenance(
    app,
    faults,
    "expiring machine leases",
    { everyMs: options.leaseSweepEveryMs ?? defaultLeaseSweepEveryMs, onReady: true },
    async () => {
      const { expired } = await expireMachineLeases(db);
      if (expired > 0) app.log.info({ expired }, "deactivated machines whose lease lapsed");
    },
  );
  scheduleMaintenance(
    app,
    faults,
    "queuing expiry reminders",
    { everyMs: options.everyMs ?? defaultPruneEveryMs, onReady: true },
    async () => {
      const { queued } = await remindExpiringLicenses(db);
      if (queued > 0) app.log.info({ queued }, "queued license-expiring e-mail");
    },
  );
}
