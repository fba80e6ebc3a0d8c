import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import nodemailer from "nodemailer";
import { claimDueEmails } from "../db/email-claim.js";
import type { DB } from "../db/schema.js";
import { attemptEmail } from "../actions/emails.js";
import type { EmailDeliveryDeps, MailSender } from "../domain/email/delivery.js";
import type { DatabaseFaults } from "./database-faults.js";

export interface MailOptions {
  /** SMTP_URL (smtp:// or smtps://, credentials inside); null or absent: nothing is sent. */
  smtpUrl?: string | null;
  /** MAIL_FROM: the From of every message. */
  from?: string;
  /** How often the worker looks for due messages; no timer unless given (tests call deliverDue). */
  pollMs?: number;
  /** Each SMTP step's deadline: connecting, the greeting, every reply (default 30 s). */
  timeoutMs?: number;
  /** The clock of the retry schedule and the lease (tests advance their own). */
  now?: () => number;
  /** The backoff's jitter; Math.random unless given. */
  random?: () => number;
}

/** The app's e-mail worker: routes wake it, tests run it. */
export interface MailWorker {
  /** Whether SMTP_URL is set: without it messages wait in the outbox, pending. */
  configured: boolean;
  now: () => number;
  /** One claim now, and its attempts, waited for: answers how many were attempted. */
  deliverDue(): Promise<number>;
  /** Asks for a claim soon (after a commit that queued or resent a message). */
  wake(): void;
}

/** Messages one claim takes, sent side by side. */
const batchSize = 8;

/**
 * The delivery worker of the e-mail outbox (domain/email/delivery.ts): claims due messages
 * every pollMs, sooner when woken or when a full batch leaves more behind, one claim at a time;
 * a message is held for the lease, longer than an attempt can last (three SMTP steps at their
 * deadline, and a margin), so a process that dies mid-send lets it go and another sends it.
 * Close waits for the attempts in flight; what they did not finish is taken again later.
 */
export function emailWorker(
  app: FastifyInstance,
  db: Kysely<DB>,
  faults: DatabaseFaults,
  options: MailOptions,
): MailWorker {
  const now = options.now ?? Date.now;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const leaseMs = 3 * timeoutMs + 60_000;
  const smtpUrl = options.smtpUrl ?? null;
  const transport =
    smtpUrl === null
      ? null
      : nodemailer.createTransport({
          url: smtpUrl,
          connectionTimeout: timeoutMs,
          greetingTimeout: timeoutMs,
          socketTimeout: timeoutMs,
        });
  const sender: MailSender | null = transport;
  const deps: EmailDeliveryDeps | null =
    sender === null
      ? null
      : {
          sender,
          from: options.from ?? "",
          now,
          random: options.random ?? Math.random,
          log: app.log,
        };
  const report = (err: unknown) => {
    if (!faults.reportIfUnavailable(err, "sending e-mail")) {
      app.log.error({ err }, "sending e-mail failed; will retry");
    }
  };
  let running: Promise<void> = Promise.resolve();
  let queued = false;
  let closed = false;
  const deliverDue = async (): Promise<number> => {
    if (deps === null) return 0;
    const claimed = await claimDueEmails(db, { now: now(), leaseMs, limit: batchSize });
    await Promise.all(claimed.map((email) => attemptEmail(db, deps, email).catch(report)));
    return claimed.length;
  };
  const run = () => {
    if (queued || closed || deps === null) return;
    queued = true;
    running = running.then(async () => {
      queued = false;
      if (closed) return;
      const count = await deliverDue().catch((err: unknown) => {
        report(err);
        return 0;
      });
      if (count === batchSize) run();
    });
  };
  const wake = options.pollMs === undefined ? () => undefined : run;
  if (options.pollMs !== undefined && deps !== null) {
    const timer = setInterval(run, options.pollMs);
    timer.unref();
    app.addHook("onReady", async () => run());
    app.addHook("onClose", async () => clearInterval(timer));
  }
  app.addHook("onClose", async () => {
    closed = true;
    await running;
    transport?.close();
  });
  return { configured: deps !== null, now, deliverDue, wake };
}
