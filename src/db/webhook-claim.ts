import { type Kysely, SqliteAdapter } from "kysely";
import type { DB, WebhookDeliveriesTable } from "./schema.js";
import { webhookTestEvent } from "../contracts/vocabulary.js";

export type ClaimedDelivery = Pick<
  WebhookDeliveriesTable,
  "event_id" | "endpoint_id" | "event_type" | "payload" | "attempts"
> & { claimed_until: number };

/**
 * Takes up to `limit` pending deliveries that are due, oldest first, for this process: each is
 * held until `now + leaseMs` (a process that dies holding one lets it go when the lease ends).
 * One statement, never a transaction around the attempts that follow. Deliveries of a disabled
 * endpoint wait (a test event excepted); those of `skipEndpoints` (in flight here) are left.
 *
 * PostgreSQL: the candidates are locked FOR UPDATE SKIP LOCKED, so processes claiming at the
 * same moment take different rows instead of queueing on each other's; the conditional update
 * makes each claim exclusive on both dialects (SQLite has one writer).
 */
export async function claimDueDeliveries(
  db: Kysely<DB>,
  options: { now: number; leaseMs: number; limit: number; skipEndpoints: readonly string[] },
): Promise<ClaimedDelivery[]> {
  const { now } = options;
  let due = db
    .selectFrom("webhook_deliveries as d")
    .innerJoin("webhook_endpoints as e", "e.id", "d.endpoint_id")
    .select(["d.event_id", "d.endpoint_id"])
    .where("d.status", "=", "pending")
    .where("d.next_attempt_at", "<=", now)
    .where((eb) => eb.or([eb("d.claimed_until", "is", null), eb("d.claimed_until", "<", now)]))
    .where((eb) => eb.or([eb("e.enabled", "=", 1), eb("d.event_type", "=", webhookTestEvent)]))
    .orderBy("d.created_at")
    .orderBy("d.event_id")
    .limit(options.limit);
  if (options.skipEndpoints.length > 0) {
    due = due.where("d.endpoint_id", "not in", [...options.skipEndpoints]);
  }
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) {
    due = due.forUpdate(["d"]).skipLocked();
  }
  const claimedUntil = now + options.leaseMs;
  const rows = await db
    .updateTable("webhook_deliveries")
    .set({ claimed_until: claimedUntil })
    .where((eb) =>
      eb(eb.refTuple("event_id", "endpoint_id"), "in", due.$asTuple("event_id", "endpoint_id")),
    )
    .where("status", "=", "pending")
    .where((eb) => eb.or([eb("claimed_until", "is", null), eb("claimed_until", "<", now)]))
    .returning(["event_id", "endpoint_id", "event_type", "payload", "attempts"])
    .execute();
  return rows
    .map((row) => ({ ...row, claimed_until: claimedUntil }))
    .sort((a, b) => (a.event_id < b.event_id ? -1 : a.event_id > b.event_id ? 1 : 0));
}
