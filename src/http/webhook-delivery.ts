import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import {
  type DeliveryDeps,
  defaultDisableAfterMs,
  deliverDueWebhooks,
} from "../domain/webhooks/deliveries.js";
import type { MasterKey } from "../domain/signing/key-material.js";
import type { DatabaseFaults } from "./database-faults.js";

export interface WebhookOptions {
  /** WEBHOOKS_ALLOW_PRIVATE: http URLs, and private, loopback and link-local addresses. */
  allowPrivate?: boolean;
  /** How often the worker looks for due deliveries; no timer unless given (tests call deliverDue). */
  pollMs?: number;
  /** Each attempt's deadline (default 10 s). */
  timeoutMs?: number;
  /** The clock of the retry schedule (tests advance their own); Date.now unless given. */
  now?: () => number;
  /** The jitter's randomness; Math.random unless given. */
  random?: () => number;
  /** WEBHOOKS_DISABLE_AFTER: consecutive failed attempts that disable an endpoint. */
  disableAfterFailures?: number;
}

/** The app's webhook worker: routes wake it, tests run it. */
export interface WebhookWorker {
  allowPrivate: boolean;
  now: () => number;
  /** One run now: claims due deliveries and attempts them; answers how many. */
  deliverDue(): Promise<number>;
  /** Asks for a run soon (after a commit that queued a delivery). */
  wake(): void;
}

/** Deliveries attempted per run, at most: one per endpoint in flight side by side. */
const batchSize = 32;

/**
 * The delivery worker: a run every pollMs, or sooner when woken, one run at a time; a full batch
 * asks for another at once. Close waits for a run in progress (its attempts end within the
 * timeout), so the database is never closed under it; what it did not finish stays pending.
 */
export function webhookWorker(
  app: FastifyInstance,
  db: Kysely<DB>,
  faults: DatabaseFaults,
  masterKey: MasterKey,
  options: WebhookOptions,
): WebhookWorker {
  const deps: DeliveryDeps = {
    masterKey,
    allowPrivate: options.allowPrivate ?? false,
    timeoutMs: options.timeoutMs ?? 10_000,
    now: options.now ?? Date.now,
    random: options.random ?? Math.random,
    disableAfterFailures: options.disableAfterFailures ?? 50,
    disableAfterMs: defaultDisableAfterMs,
  };
  const deliverDue = () => deliverDueWebhooks(db, deps, { limit: batchSize });
  let running: Promise<void> = Promise.resolve();
  let queued = false;
  let closed = false;
  const run = () => {
    if (queued || closed) return;
    queued = true;
    running = running.then(async () => {
      queued = false;
      try {
        if ((await deliverDue()) === batchSize) run();
      } catch (err) {
        if (!faults.reportIfUnavailable(err, "delivering webhooks")) {
          app.log.error({ err }, "delivering webhooks failed; will retry");
        }
      }
    });
  };
  if (options.pollMs !== undefined) {
    const timer = setInterval(run, options.pollMs);
    timer.unref();
    app.addHook("onReady", async () => run());
    app.addHook("onClose", async () => {
      clearInterval(timer);
    });
  }
  app.addHook("onClose", async () => {
    closed = true;
    await running;
  });
  return {
    allowPrivate: deps.allowPrivate,
    now: deps.now,
    deliverDue,
    wake: options.pollMs === undefined ? () => undefined : run,
  };
}
