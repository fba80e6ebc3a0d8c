import type { Transaction } from "kysely";
import type { SendMailOptions } from "nodemailer";
import type { ClaimedEmail } from "../../db/email-claim.js";
import type { DB } from "../../db/schema.js";
import { type EmailState, emailLimits } from "../../contracts/vocabulary.js";

/** What sends a message: nodemailer's SMTP transport (its sendMail). */
export interface MailSender {
  sendMail(message: SendMailOptions): Promise<{ response: string; messageId: string }>;
}

/** Where the worker writes what the outbox does not show (nothing with an address in it). */
export interface EmailDeliveryLog {
  warn(details: Record<string, unknown>, message: string): void;
}

export interface EmailDeliveryDeps {
  sender: MailSender;
  /** MAIL_FROM: the From header and the envelope's sender. */
  from: string;
  now: () => number;
  random: () => number;
  log: EmailDeliveryLog;
}

/**
 * Retries: the wait doubles from 30 s up to 6 h, each stretched or shortened by up to 10 % at
 * random; after the 12th failed attempt (about 20 hours after the first) the message fails.
 */
export const emailRetry = { firstDelayMs: 30_000, maxDelayMs: 6 * 3_600_000, maxAttempts: 12 };

/** The wait after `attempts` failed attempts, or null when the message has failed for good. */
export function emailRetryDelay(attempts: number, random: () => number): number | null {
  if (attempts >= emailRetry.maxAttempts) return null;
  const base = Math.min(emailRetry.firstDelayMs * 2 ** (attempts - 1), emailRetry.maxDelayMs);
  return Math.round(base * (0.9 + 0.2 * random()));
}

/** An attempt's outcome as the outbox records it. */
export interface SmtpOutcome {
  sent: boolean;
  /** A refusal that no retry changes: an SMTP 5xx reply (a refused recipient, a wrong password). */
  permanent: boolean;
  responseCode: number | null;
  response: string;
  messageId: string | null;
}

const replyCode = (text: string) => {
  const match = /^([2-5]\d\d)[\s-]/.exec(text);
  return match ? Number(match[1]) : null;
};

const bounded = (text: string) => text.replace(/\s+/g, " ").trim().slice(0, emailLimits.reply);

/**
 * A failure of nodemailer as the outbox sees it: an SMTP reply (its code, `err.responseCode`,
 * decides: 5xx is permanent, 4xx temporary), or no reply at all (a connection refused, reset or
 * timed out, DNS, TLS: temporary).
 */
export function smtpFailure(err: unknown): SmtpOutcome {
  const fields = (typeof err === "object" && err !== null ? err : {}) as {
    responseCode?: unknown;
    response?: unknown;
    code?: unknown;
    message?: unknown;
  };
  const response = typeof fields.response === "string" ? fields.response : null;
  const code =
    typeof fields.responseCode === "number"
      ? fields.responseCode
      : response === null
        ? null
        : replyCode(response);
  const message = typeof fields.message === "string" ? fields.message : String(err);
  const errorCode = typeof fields.code === "string" ? `${fields.code}: ` : "";
  return {
    sent: false,
    permanent: code !== null && code >= 500,
    responseCode: code,
    response: bounded(response ?? `${errorCode}${message}`),
    messageId: null,
  };
}

/** The Message-ID of a message: its outbox id, at MAIL_FROM's domain. One for every attempt. */
export function messageIdOf(id: string, from: string): string {
  const domain = /@([^\s@<>]+)>?\s*$/.exec(from)?.[1] ?? "shipkey.invalid";
  return `<${id}@${domain}>`;
}

/** One attempt of a claimed message through the sender. */
export async function sendClaimedEmail(
  deps: EmailDeliveryDeps,
  email: ClaimedEmail,
): Promise<SmtpOutcome> {
  try {
    const info = await deps.sender.sendMail({
      from: deps.from,
      to:
        email.to_name === null
          ? email.to_address
          : { name: email.to_name, address: email.to_address },
      subject: email.subject,
      text: email.text_body,
      html: email.html_body,
      messageId: messageIdOf(email.id, deps.from),
      headers: { "Auto-Submitted": "auto-generated" },
    });
    return {
      sent: true,
      permanent: false,
      responseCode: replyCode(info.response),
      response: bounded(info.response),
      messageId: info.messageId,
    };
  } catch (err) {
    return smtpFailure(err);
  }
}

/** What a failure for good tells (the email.failed event's data); null for any other outcome. */
export type EmailFailure = Record<string, unknown> & { product: string | null };

/**
 * Writes one attempt's outcome: sent; pending again after the backoff; or failed (a 5xx reply,
 * or the last retry). Only while this process still holds the message (its claim's lease):
 * after the lease another process owns it, and nothing is written. Answers the state written
 * and, for a failure for good, what the email.failed event tells.
 */
export async function writeEmailOutcome(
  trx: Transaction<DB>,
  email: ClaimedEmail,
  outcome: SmtpOutcome & { startedAt: number; finishedAt: number },
  random: () => number,
): Promise<{ state: EmailState | null; failure: EmailFailure | null }> {
  const attempts = email.attempts + 1;
  const delay = outcome.sent || outcome.permanent ? null : emailRetryDelay(attempts, random);
  const state: EmailState = outcome.sent ? "sent" : delay === null ? "failed" : "pending";
  const updated = await trx
    .updateTable("email_messages")
    .set({
      state,
      attempts,
      next_attempt_at: delay === null ? null : outcome.finishedAt + delay,
      claimed_until: null,
      last_attempt_at: outcome.startedAt,
      last_response_code: outcome.responseCode,
      last_response: outcome.response,
      ...(outcome.sent ? { sent_at: outcome.finishedAt, message_id: outcome.messageId } : {}),
      updated_at: outcome.finishedAt,
    })
    .where("id", "=", email.id)
    .where("claimed_until", "=", email.claimed_until)
    .executeTakeFirst();
  if (updated.numUpdatedRows === 0n) return { state: null, failure: null };
  if (state !== "failed") return { state, failure: null };
  const about = await trx
    .selectFrom("email_messages as m")
    .leftJoin("products as p", "p.id", "m.product_id")
    .leftJoin("licenses as l", "l.id", "m.license_id")
    .select(["p.slug", "l.license_key"])
    .where("m.id", "=", email.id)
    .executeTakeFirst();
  return {
    state,
    failure: {
      emailId: email.id,
      kind: email.kind,
      product: about?.slug ?? null,
      licenseKey: about?.license_key ?? null,
      customerEmail: email.to_address,
      attempts,
      lastResponseCode: outcome.responseCode,
      // A reply may quote the address: the event names it only as customerEmail, which an
      // endpoint without licenses:read does not get (webhooks/license-data.ts).
      lastResponse: outcome.response.split(email.to_address).join("<recipient>"),
    },
  };
}
