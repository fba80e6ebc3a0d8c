import { type ExpressionBuilder, type Kysely, SqliteAdapter } from "kysely";
import type { DB, EmailMessagesTable } from "./schema.js";

export type ClaimedEmail = Pick<
  EmailMessagesTable,
  "id" | "kind" | "product_id" | "to_address" | "to_name" | "subject" | "text_body" | "html_body"
> & { attempts: number; claimed_until: number };

/** Due: pending and its time come, or held past its lease by a process that died mid-send. */
const claimable = (eb: ExpressionBuilder<DB, "email_messages">, now: number) =>
  eb.or([
    eb.and([eb("state", "=", "pending"), eb("next_attempt_at", "<=", now)]),
    eb.and([eb("state", "=", "sending"), eb("claimed_until", "<", now)]),
  ]);

/**
 * Takes up to `limit` messages for this process, oldest first: the pending ones that are due, and
 * those a process held past its lease (it died mid-send). Each becomes `sending`, held until
 * `now + leaseMs`. One statement, never a transaction around the sending that follows.
 *
 * PostgreSQL: the candidates are locked FOR UPDATE SKIP LOCKED, so processes claiming at the same
 * moment take different rows; the conditional update makes each claim exclusive on both dialects
 * (SQLite has one writer).
 */
export async function claimDueEmails(
  db: Kysely<DB>,
  options: { now: number; leaseMs: number; limit: number },
): Promise<ClaimedEmail[]> {
  const { now } = options;
  let candidates = db
    .selectFrom("email_messages")
    .select("id")
    .where((eb) => claimable(eb, now))
    .orderBy("created_at")
    .orderBy("id")
    .limit(options.limit);
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) {
    candidates = candidates.forUpdate().skipLocked();
  }
  const claimedUntil = now + options.leaseMs;
  const rows = await db
    .updateTable("email_messages")
    .set({ state: "sending", claimed_until: claimedUntil, updated_at: now })
    .where("id", "in", candidates)
    .where((eb) => claimable(eb, now))
    .returning([
      "id",
      "kind",
      "product_id",
      "to_address",
      "to_name",
      "subject",
      "text_body",
      "html_body",
      "attempts",
    ])
    .execute();
  return rows
    .map((row) => ({ ...row, claimed_until: claimedUntil }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
