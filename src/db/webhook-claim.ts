import { type Kysely, SqliteAdapter } from "kysely";
import type { DB, WebhookDeliveriesTable } from "./schema.js";
import { webhookTestEvent } from "../contracts/vocabulary.js";

export type ClaimedDelivery = Pick<
  WebhookDeliveriesTable,
  "event_id" | "endpoint_id" | "event_type" | "payload" | "attempts"
> & { claimed_until: number };

/**
 * Takes up to `limit` pending deliveries that are due, for this process, an endpoint's next before
 * another's after it and then oldest first: each is
 * held until `now + leaseMs` (a process that dies holding one lets it go when the lease ends).
 * Of one endpoint it takes no more than `perEndpoint` less the attempts in flight there, in any
 * process: its deliveries under a live lease. One statement, never a transaction around the
 * attempts that follow. Deliveries of a disabled endpoint wait (a test event excepted).
 *
 * PostgreSQL: the candidates are locked FOR UPDATE SKIP LOCKED, so processes claiming at the
 * same moment take different rows instead of queueing on each other's; the conditional update
 * makes each claim exclusive on both dialects (SQLite has one writer).
 */
export async function claimDueDeliveries(
  db: Kysely<DB>,
  options: { now: number; leaseMs: number; limit: number; perEndpoint: number },
): Promise<ClaimedDelivery[]> {
  const { now } = options;
  // A delivery in flight was due when it was claimed, so the due index finds it.
  const inFlight = db
    .selectFrom("webhook_deliveries")
    .select((eb) => ["endpoint_id", eb.fn.countAll<number>().as("attempts")])
    .where("status", "=", "pending")
    .where("next_attempt_at", "<=", now)
    .where("claimed_until", ">=", now)
    .groupBy("endpoint_id");
  // Each due delivery's place among its endpoint's, oldest first.
  const due = db
    .selectFrom("webhook_deliveries as d")
    .innerJoin("webhook_endpoints as e", "e.id", "d.endpoint_id")
    .select((eb) => [
      "d.event_id",
      "d.endpoint_id",
      "d.created_at",
      eb.fn
        .agg<number>("row_number")
        .over((ob) => ob.partitionBy("d.endpoint_id").orderBy("d.created_at").orderBy("d.event_id"))
        .as("place"),
    ])
    .where("d.status", "=", "pending")
    .where("d.next_attempt_at", "<=", now)
    .where((eb) => eb.or([eb("d.claimed_until", "is", null), eb("d.claimed_until", "<", now)]))
    .where((eb) => eb.or([eb("e.enabled", "=", 1), eb("d.event_type", "=", webhookTestEvent)]));
  const candidates = db
    .selectFrom(due.as("due"))
    .leftJoin(inFlight.as("busy"), "busy.endpoint_id", "due.endpoint_id")
    .select(["due.event_id", "due.endpoint_id"])
    .where(
      (eb) => eb("due.place", "+", eb.fn.coalesce("busy.attempts", eb.lit(0))),
      "<=",
      options.perEndpoint,
    )
    // The endpoints with the fewest attempts in flight first, then the oldest: an endpoint's
    // first attempt goes before another's second, so receivers that never answer cannot take
    // every attempt from one that does.
    .orderBy((eb) => eb("due.place", "+", eb.fn.coalesce("busy.attempts", eb.lit(0))))
    .orderBy("due.created_at")
    .orderBy("due.event_id")
    .limit(options.limit);
  // A query with a window function cannot lock rows: the rows are locked one level up.
  const chosen =
    db.getExecutor().adapter instanceof SqliteAdapter
      ? candidates
      : db
          .selectFrom("webhook_deliveries")
          .select(["event_id", "endpoint_id"])
          .where((eb) =>
            eb(
              eb.refTuple("event_id", "endpoint_id"),
              "in",
              candidates.$asTuple("event_id", "endpoint_id"),
            ),
          )
          .forUpdate()
          .skipLocked();
  const claimedUntil = now + options.leaseMs;
  const rows = await db
    .updateTable("webhook_deliveries")
    .set({ claimed_until: claimedUntil })
    .where((eb) =>
      eb(eb.refTuple("event_id", "endpoint_id"), "in", chosen.$asTuple("event_id", "endpoint_id")),
    )
    .where("status", "=", "pending")
    .where((eb) => eb.or([eb("claimed_until", "is", null), eb("claimed_until", "<", now)]))
    .returning(["event_id", "endpoint_id", "event_type", "payload", "attempts"])
    .execute();
  return rows
    .map((row) => ({ ...row, claimed_until: claimedUntil }))
    .sort((a, b) => (a.event_id < b.event_id ? -1 : a.event_id > b.event_id ? 1 : 0));
}
