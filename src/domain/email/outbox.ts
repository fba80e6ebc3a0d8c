import type { Kysely, Selectable, Transaction } from "kysely";
import type { DB, EmailMessagesTable } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { newId } from "../../lib/ids.js";
import { isoOrNull, toIso } from "../../lib/time.js";
import { decodeCursor, encodeCursor, type Page } from "../pagination.js";
import { assertKeyCovers } from "../api-keys/key-authority.js";
import type { EmailMessage, EmailMessageDetail } from "../../contracts/emails.js";
import type { EmailKind, EmailState } from "../../contracts/vocabulary.js";

/** A message as its cause queues it: rendered, addressed, with the key that makes it one. */
export interface OutgoingEmail {
  idempotencyKey: string;
  kind: EmailKind;
  productId: string | null;
  licenseId: string | null;
  to: string;
  toName: string | null;
  subject: string;
  text: string;
  html: string;
}

/**
 * Queues a message in the outbox, in the transaction of its cause, so it exists exactly when
 * the cause committed. One message per idempotency key: a second call with the same key (the
 * cause retried, a webhook delivered twice, two processes at once) queues nothing and answers
 * the message already there (`created: false`). The delivery worker sends it when due.
 */
export async function enqueueEmail(
  trx: Transaction<DB>,
  email: OutgoingEmail,
  now = Date.now(),
): Promise<{ id: string; created: boolean }> {
  const id = newId("eml", now);
  const inserted = await trx
    .insertInto("email_messages")
    .values({
      id,
      idempotency_key: email.idempotencyKey,
      kind: email.kind,
      product_id: email.productId,
      license_id: email.licenseId,
      to_address: email.to,
      to_name: email.toName,
      subject: email.subject,
      text_body: email.text,
      html_body: email.html,
      state: "pending",
      attempts: 0,
      next_attempt_at: now,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.column("idempotency_key").doNothing())
    .returning("id")
    .executeTakeFirst();
  if (inserted) return { id: inserted.id, created: true };
  const existing = await trx
    .selectFrom("email_messages")
    .select("id")
    .where("idempotency_key", "=", email.idempotencyKey)
    .executeTakeFirstOrThrow();
  return { id: existing.id, created: false };
}

type MessageRow = Selectable<EmailMessagesTable> & {
  product_slug: string | null;
  license_key: string | null;
};

function messages(db: Kysely<DB>) {
  return db
    .selectFrom("email_messages as m")
    .leftJoin("products as p", "p.id", "m.product_id")
    .leftJoin("licenses as l", "l.id", "m.license_id")
    .selectAll("m")
    .select(["p.slug as product_slug", "l.license_key as license_key"]);
}

function toMessageView(row: MessageRow): EmailMessage {
  return {
    id: row.id,
    kind: row.kind,
    idempotencyKey: row.idempotency_key,
    product: row.product_slug,
    licenseKey: row.license_key,
    to: row.to_address,
    toName: row.to_name,
    subject: row.subject,
    state: row.state,
    attempts: row.attempts,
    nextAttemptAt: row.state === "pending" ? isoOrNull(row.next_attempt_at) : null,
    lastAttemptAt: isoOrNull(row.last_attempt_at),
    lastResponseCode: row.last_response_code,
    lastResponse: row.last_response,
    messageId: row.message_id,
    sentAt: isoOrNull(row.sent_at),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

/** What a caller reaches: every product (null), or only these products' messages. */
export type ProductScope = readonly string[] | null;

export interface EmailFilter {
  limit: number;
  cursor?: string;
  state?: EmailState;
  productSlug?: string;
  productIds: ProductScope;
  licenseId?: string;
}

/** The outbox, newest first, cursor-paginated; of one state, product or license if asked. */
export async function listEmails(db: Kysely<DB>, filter: EmailFilter): Promise<Page<EmailMessage>> {
  let query = messages(db)
    .orderBy("m.created_at", "desc")
    .orderBy("m.id", "desc")
    .limit(filter.limit + 1);
  if (filter.state !== undefined) query = query.where("m.state", "=", filter.state);
  if (filter.productSlug !== undefined) query = query.where("p.slug", "=", filter.productSlug);
  if (filter.licenseId !== undefined) query = query.where("m.license_id", "=", filter.licenseId);
  if (filter.productIds !== null) {
    query = query.where("m.product_id", "in", [...filter.productIds, ""]);
  }
  if (filter.cursor !== undefined) {
    const { at, id } = decodeCursor(filter.cursor);
    query = query.where((eb) =>
      eb.or([
        eb("m.created_at", "<", at),
        eb.and([eb("m.created_at", "=", at), eb("m.id", "<", id)]),
      ]),
    );
  }
  const rows = await query.execute();
  const last = rows[filter.limit - 1];
  return {
    items: rows.slice(0, filter.limit).map(toMessageView),
    nextCursor: rows.length > filter.limit && last ? encodeCursor(last.created_at, last.id) : null,
  };
}

/**
 * A message by id, or 404 EMAIL_NOT_FOUND; a key limited to products is refused another
 * product's message (403 PRODUCT_NOT_IN_KEY naming it), as it is that product's licenses.
 */
async function requireMessage(db: Kysely<DB>, id: string, scope: ProductScope) {
  const row = await messages(db).where("m.id", "=", id).executeTakeFirst();
  if (!row) throw new ShipkeyError("EMAIL_NOT_FOUND", `E-mail ${id} not found`);
  if (scope !== null && row.product_id === null) {
    throw new ShipkeyError(
      "PRODUCT_NOT_IN_KEY",
      `E-mail ${id} is about a deleted product: this API key is limited to its products`,
    );
  }
  if (row.product_id !== null) {
    assertKeyCovers(scope, { id: row.product_id, slug: row.product_slug ?? row.product_id });
  }
  return row;
}

/** One message with the text and HTML it was sent with. */
export async function getEmail(
  db: Kysely<DB>,
  id: string,
  scope: ProductScope,
): Promise<EmailMessageDetail> {
  const row = await requireMessage(db, id, scope);
  return { ...toMessageView(row), text: row.text_body, html: row.html_body };
}

/**
 * Queues a message again, whatever its state: pending now, with a fresh retry schedule. A
 * message an attempt holds stays with that attempt (it is never sent twice at once), whose
 * outcome decides; one whose hold has lapsed (its process died) is queued.
 */
export async function requeueEmail(
  db: Kysely<DB>,
  id: string,
  scope: ProductScope,
  now = Date.now(),
): Promise<EmailMessage> {
  await requireMessage(db, id, scope);
  await db
    .updateTable("email_messages")
    .set({
      state: "pending",
      attempts: 0,
      next_attempt_at: now,
      claimed_until: null,
      updated_at: now,
    })
    .where("id", "=", id)
    .where((eb) => eb.or([eb("state", "!=", "sending"), eb("claimed_until", "<", now)]))
    .execute();
  return toMessageView(await requireMessage(db, id, scope));
}
