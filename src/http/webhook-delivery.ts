import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import type { ClaimedDelivery } from "../db/webhook-claim.js";
import {
  attemptDelivery,
  claimDueWebhooks,
  type DeliveryDeps,
  defaultDisableAfterMs,
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
  /** One claim now, and its attempts, waited for: answers how many. */
  deliverDue(): Promise<number>;
  /** Asks for a claim soon (after a commit that queued a delivery). */
  wake(): void;
}

/** Attempts in flight in this process, at most, over all endpoints. */
const inFlightLimit = 32;

/**
 * The delivery worker: claims due deliveries every pollMs, sooner when woken or when an attempt
 * ends, one claim at a time, and starts their attempts without waiting for them: each endpoint
 * has a few attempts in flight at most (deliveries.ts, attemptsPerEndpoint), so a receiver that
 * never answers holds only its own deliveries, and the next claim serves the other endpoints.
 * Close waits for the claim and the attempts in flight (each ends within the timeout), so the
 * database is never closed under them; what they did not finish stays pending.
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
    log: app.log,
  };
  const report = (err: unknown) => {
    if (!faults.reportIfUnavailable(err, "delivering webhooks")) {
      app.log.error({ err }, "delivering webhooks failed; will retry");
    }
  };
  const inFlight = new Set<Promise<void>>();
  let claiming: Promise<void> = Promise.resolve();
  let queued = false;
  let closed = false;
  /** Starts an attempt, not waited for; its end frees a place for the next claim. */
  const start = (delivery: ClaimedDelivery): Promise<void> => {
    const attempt = attemptDelivery(db, deps, delivery)
      .catch(report)
      .finally(() => {
        inFlight.delete(attempt);
        wake();
      });
    inFlight.add(attempt);
    return attempt;
  };
  const claim = async () =>
    (await claimDueWebhooks(db, deps, inFlightLimit - inFlight.size)).map(start);
  const run = () => {
    if (queued || closed) return;
    queued = true;
    claiming = claiming.then(async () => {
      queued = false;
      if (closed || inFlight.size >= inFlightLimit) return;
      await claim().catch(report);
    });
  };
  // Without a timer, tests claim by hand (deliverDue).
  const wake = options.pollMs === undefined ? () => undefined : run;
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
    await claiming;
    await Promise.all(inFlight);
  });
  return {
    allowPrivate: deps.allowPrivate,
    now: deps.now,
    deliverDue: async () => {
      const attempts = await claim();
      await Promise.all(attempts);
      return attempts.length;
    },
    wake,
  };
}
