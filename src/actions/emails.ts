import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import { type Actor, withAudit } from "../domain/audit/audit-log.js";
import type { IdempotencyClaim } from "../domain/idempotency/idempotency-keys.js";
import { type EmailSettingsChanges, updateEmailSettings } from "../domain/email/email-settings.js";
import { requeueEmail } from "../domain/email/outbox.js";
import {
  type EmailDeliveryDeps,
  sendClaimedEmail,
  writeEmailOutcome,
} from "../domain/email/delivery.js";
import { emitWebhookEvent } from "../domain/webhooks/events.js";
import { licensesToRemind } from "../domain/email/expiry-reminders.js";
import { enqueueLicenseExpiring } from "../domain/email/messages.js";
import type { ClaimedEmail } from "../db/email-claim.js";
import { inTransaction } from "../db/transaction.js";
import { type EmailState, emailKinds } from "../contracts/vocabulary.js";

// E-mail: the use cases' actions. An admin's resend and template changes run their rows and their
// audit entry in one transaction (withAudit), so the admin API, the dashboard and the CLI record
// the same entry whichever way a write was made; details never hold an address nor a license
// key. The service's own, the delivery worker's attempt and the expiry reminders, write no audit
// entry: the outbox is their record.

/** Sends a message of the outbox again (any state); a key limited to products, only theirs. */
export const resendEmail = (
  db: Kysely<DB>,
  actor: Actor,
  id: string,
  now?: number,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "email.resend",
    (trx) => requeueEmail(trx, id, actor.productIds ?? null, now),
    (message) => ({ target: { type: "email", id }, details: { kind: message.kind } }),
    idempotency,
  );

/** A product's vendor name, download link and templates; the details name what changed. */
export const changeProductEmail = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  changes: EmailSettingsChanges,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "product.update_email",
    (trx) => updateEmailSettings(trx, slug, changes),
    (settings) => ({
      target: { type: "product", id: settings.product },
      details: {
        changed: [
          ...(changes.vendorName === undefined ? [] : ["vendorName"]),
          ...(changes.downloadUrl === undefined ? [] : ["downloadUrl"]),
          ...(changes.expiryReminders === undefined ? [] : ["expiryReminders"]),
        ],
        templates: emailKinds.filter((kind) => changes.templates?.[kind] !== undefined),
      },
    }),
    idempotency,
  );

/**
 * One attempt of a claimed message (the delivery worker's): the SMTP conversation, with no
 * transaction open, then its outcome written and, when the message failed for good, the
 * email.failed event, in one transaction. Answers the state written (null: the lease had passed
 * and another process owns the message).
 */
export async function attemptEmail(
  db: Kysely<DB>,
  deps: EmailDeliveryDeps,
  email: ClaimedEmail,
): Promise<EmailState | null> {
  const startedAt = deps.now();
  const outcome = await sendClaimedEmail(deps, email);
  const finishedAt = deps.now();
  const written = await inTransaction(db, async (trx) => {
    const result = await writeEmailOutcome(
      trx,
      email,
      { ...outcome, startedAt, finishedAt },
      deps.random,
    );
    if (result.failure) {
      await emitWebhookEvent(
        trx,
        { type: "email.failed", product: result.failure.product, data: result.failure },
        finishedAt,
      );
    }
    return result.state;
  });
  if (!outcome.sent) {
    // The reply may name the recipient: the outbox shows it, the log does not.
    deps.log.warn(
      {
        emailId: email.id,
        attempt: email.attempts + 1,
        code: outcome.responseCode,
        state: written,
      },
      "an e-mail attempt failed",
    );
  }
  return written;
}

/**
 * The expiry reminders due now (the hourly sweep): a license_expiring message for each license
 * that licensesToRemind finds, each in its own transaction, a batch at a time. Answers how many
 * were queued.
 */
export async function remindExpiringLicenses(
  db: Kysely<DB>,
  options: { now?: number; batchSize?: number } = {},
): Promise<{ queued: number }> {
  const now = options.now ?? Date.now();
  let queued = 0;
  for (;;) {
    const due = await licensesToRemind(db, now, options.batchSize ?? 200);
    let created = 0;
    for (const input of due) {
      const message = await inTransaction(db, (trx) =>
        enqueueLicenseExpiring(trx, { ...input, now }),
      );
      if (message.created) created++;
    }
    queued += created;
    if (created === 0) return { queued };
  }
}
