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
 * so the event exists exactly when its cause committed. With no subscriber it writes nothing
 * (one statement either way).
 */
export async function emitWebhookEvent(
  db: Kysely<DB>,
  event: WebhookEvent,
  now = Date.now(),
): Promise<void> {
  await insertDeliveries(db, {
    eventId: newId("msg", now),
    eventType: event.type,
    // Event types and slugs hold no LIKE wildcard ("_" and "%" appear in neither).
    eventPattern: `%"${event.type}"%`,
    productPattern: event.product === null ? "%" : `%"${event.product}"%`,
    payload: eventPayload(event.type, event.data, now),
    now,
  });
}

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
    .expression((eb) =>
      eb
        .selectFrom("webhook_endpoints")
        .select([
          sql<string>`cast(${p.eventId} as varchar(64))`.as("event_id"),
          "id",
          sql<string>`cast(${p.eventType} as varchar(64))`.as("event_type"),
          sql<string>`cast(${p.payload} as text)`.as("payload"),
          sql<"pending">`'pending'`.as("status"),
          sql<number>`0`.as("attempts"),
          sql<number>`cast(${p.now} as bigint)`.as("next_attempt_at"),
          sql<number>`cast(${p.now} as bigint)`.as("created_at"),
        ])
        .where("enabled", "=", 1)
        .where("events", "like", p.eventPattern)
        .where((w) => w.or([w("products", "is", null), w("products", "like", p.productPattern)])),
    ),
);
