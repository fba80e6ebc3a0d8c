import { type Kysely, sql } from "kysely";
import { compileOnce } from "../../db/compiled-query.js";
import type { DB } from "../../db/schema.js";
import { newId } from "../../lib/ids.js";
import { toIso } from "../../lib/time.js";
import type { WebhookEventType } from "../../contracts/vocabulary.js";

/** An event as its cause describes it; `product` is the slug of the product it is about. */
export interface WebhookEvent {
  type: WebhookEventType;
  product: string | null;
  data: Record<string, unknown>;
}

/** The body every delivery carries (Standard Webhooks' shape). */
export function eventPayload(type: string, data: Record<string, unknown>, now: number): string {
  return JSON.stringify({ type, timestamp: toIso(now), data });
}

/**
 * Records an event in the outbox: one pending delivery per enabled endpoint that subscribes to
 * its type (and, if limited to products, to its product). Call it with the cause's transaction,
 * so the event exists exactly when its cause committed. With no subscriber it writes nothing.
 *
 * Most events have no subscriber. On SQLite the INSERT … SELECT costs even when it selects
 * nothing (it opens the outbox and its indexes for writing: about 29 µs of an activation, a read
 * 17 µs), so a read of the same subscribers, with the same handle, goes first. A read that finds
 * none sees what the INSERT would have seen (in a transaction on SQLite no other writer can
 * commit in between; on PostgreSQL an endpoint committed in between misses the event as one
 * committed just after the INSERT would).
 */
export async function emitWebhookEvent(
  db: Kysely<DB>,
  event: WebhookEvent,
  now = Date.now(),
): Promise<void> {
  const patterns = {
    // Event types and slugs hold no LIKE wildcard ("_" and "%" appear in neither).
    eventPattern: `%"${event.type}"%`,
    productPattern: event.product === null ? "%" : `%"${event.product}"%`,
  };
  const { rows } = await findSubscriber(db, patterns);
  if (rows.length === 0) return;
  await insertDeliveries(db, {
    ...patterns,
    eventId: newId("msg", now),
    eventType: event.type,
    payload: eventPayload(event.type, event.data, now),
    now,
  });
}

/** The enabled endpoints an event reaches, as insertDeliveries selects them. */
function subscribers(db: Kysely<DB>, p: { eventPattern: string; productPattern: string }) {
  return db
    .selectFrom("webhook_endpoints")
    .where("enabled", "=", 1)
    .where("events", "like", p.eventPattern)
    .where((w) => w.or([w("products", "is", null), w("products", "like", p.productPattern)]));
}

const findSubscriber = compileOnce<
  { eventPattern: string; productPattern: string },
  { id: string }
>(["eventPattern", "productPattern"], (db, p) => subscribers(db, p).select("id").limit(sql.lit(1)));

const insertDeliveries = compileOnce<
  {
    eventId: string;
    eventType: string;
    eventPattern: string;
    productPattern: string;
    payload: string;
    now: number;
  },
  never
>(["eventId", "eventType", "payload", "now", "eventPattern", "productPattern"], (db, p) =>
  db
    .insertInto("webhook_deliveries")
    .columns([
      "event_id",
      "endpoint_id",
      "event_type",
      "payload",
      "status",
      "attempts",
      "next_attempt_at",
      "created_at",
    ])
    .expression(
      subscribers(db, p).select([
        sql<string>`cast(${p.eventId} as varchar(64))`.as("event_id"),
        "id",
        sql<string>`cast(${p.eventType} as varchar(64))`.as("event_type"),
        sql<string>`cast(${p.payload} as text)`.as("payload"),
        sql<"pending">`'pending'`.as("status"),
        sql<number>`0`.as("attempts"),
        sql<number>`cast(${p.now} as bigint)`.as("next_attempt_at"),
        sql<number>`cast(${p.now} as bigint)`.as("created_at"),
      ]),
    ),
);
