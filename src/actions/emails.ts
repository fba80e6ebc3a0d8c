import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import { type Actor, withAudit } from "../domain/audit/audit-log.js";
import { type EmailSettingsChanges, updateEmailSettings } from "../domain/email/email-settings.js";
import { requeueEmail } from "../domain/email/outbox.js";
import { emailKinds } from "../contracts/vocabulary.js";

// E-mail as admins act on it: the use cases' actions. Each runs its rows and its audit entry in
// one transaction (withAudit), so the admin API, the dashboard and the CLI record the same entry
// whichever way a write was made. Details never hold an address nor a license key.

/** Sends a message of the outbox again (any state); a key limited to products, only theirs. */
export const resendEmail = (db: Kysely<DB>, actor: Actor, id: string, now?: number) =>
  withAudit(
    db,
    actor,
    "email.resend",
    (trx) => requeueEmail(trx, id, actor.productIds ?? null, now),
    (message) => ({ target: { type: "email", id }, details: { kind: message.kind } }),
  );

/** A product's vendor name, download link and templates; the details name what changed. */
export const changeProductEmail = (
  db: Kysely<DB>,
  actor: Actor,
  slug: string,
  changes: EmailSettingsChanges,
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
        ],
        templates: emailKinds.filter((kind) => changes.templates?.[kind] !== undefined),
      },
    }),
  );
