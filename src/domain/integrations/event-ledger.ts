import type { Kysely, Selectable } from "kysely";
import { inTransaction } from "../../db/transaction.js";
import type { DB, IntegrationEventsTable } from "../../db/schema.js";
import { isDatabaseUnavailable } from "../../db/faults.js";
import { ShipkeyError } from "../../errors.js";
import { newId } from "../../lib/ids.js";
import { isoOrNull, toIso } from "../../lib/time.js";
import { decodeCursor, encodeCursor, type Page } from "../pagination.js";
import { type InboundEvent, readInboundEvent } from "./inbound-event.js";
import { type IntegrationRow, requireIntegrationRow } from "./integrations.js";
import { type EventHandlers, type Outcome, processEvent } from "./process-event.js";
import type { IntegrationEvent } from "../../contracts/integrations.js";
import type { IntegrationEventStatus } from "../../contracts/vocabulary.js";

type EventRow = Selectable<IntegrationEventsTable>;
type Integration = IntegrationRow & { product_slug: string };

/**
 * Records a verified event once and processes it in the same transaction: the insert of a copy
 * already recorded (or being recorded by a concurrent request, whose commit it waits for) does
 * nothing, and the copy is a "duplicate" that changes nothing. A refusal by a handler (a
 * ShipkeyError: a plan that does not exist) rolls its effects back; the event is then recorded
 * as ignored with the refusal as its reason. A database fault propagates: 503, and the provider
 * retries.
 */
export async function receiveInboundEvent(
  db: Kysely<DB>,
  handlers: EventHandlers,
  integration: Integration,
  event: InboundEvent,
  body: string,
  now: number,
): Promise<IntegrationEventStatus | "duplicate"> {
  const row = newRow(integration.id, event, body, now);
  try {
    return await inTransaction(db, async (trx) => {
      if (!(await insertOnce(trx, row))) return "duplicate";
      const outcome = await processEvent(trx, handlers, { integration, event, now });
      await recordOutcome(trx, row.id, outcome, now);
      return outcome.status;
    });
  } catch (err) {
    if (!(err instanceof ShipkeyError) || isDatabaseUnavailable(err)) throw err;
    const refused = { ...row, status: "ignored" as const, reason: err.message, processed_at: now };
    return (await insertOnce(db, refused)) ? "ignored" : "duplicate";
  }
}

/**
 * Processes a recorded event again (a replay after a mapping was fixed; a waiting event's
 * retry): only one not processed yet whose body is kept. Its row is written first, which orders
 * two replays of one event; the second finds it processed.
 */
export async function reprocessEvent(
  db: Kysely<DB>,
  handlers: EventHandlers,
  integrationId: string,
  eventId: string,
  now: number,
): Promise<IntegrationEvent> {
  return inTransaction(db, async (trx) => {
    const integration = await requireIntegrationRow(trx, integrationId);
    await trx
      .updateTable("integration_events")
      .set((eb) => ({ attempts: eb("attempts", "+", 1) }))
      .where("id", "=", eventId)
      .where("integration_id", "=", integrationId)
      .execute();
    const row = await requireEventRow(trx, integrationId, eventId);
    if (row.status === "processed" || row.body === null) {
      throw new ShipkeyError(
        "INTEGRATION_EVENT_NOT_REPLAYABLE",
        row.status === "processed"
          ? `Event ${eventId} was processed already`
          : `Event ${eventId}'s body is no longer kept (INTEGRATION_EVENT_BODY_DAYS)`,
      );
    }
    const event = readInboundEvent(integration.provider, row.body);
    // A handler's refusal fails the replay as a whole: the event stays as it was.
    const outcome = await processEvent(trx, handlers, { integration, event, now });
    await recordOutcome(trx, row.id, outcome, now);
    return toEventView(await requireEventRow(trx, integrationId, eventId));
  });
}

/**
 * Waiting events whose next attempt is due, processed again (a renewal whose subscription has
 * arrived since); one waiting past its 24 h is ignored with that reason. How many it retried.
 */
export async function retryWaitingEvents(
  db: Kysely<DB>,
  handlersOf: (provider: Integration["provider"]) => EventHandlers,
  now: number,
): Promise<number> {
  const due = await db
    .selectFrom("integration_events")
    .innerJoin("integrations", "integrations.id", "integration_events.integration_id")
    .select(["integration_events.id", "integration_id", "retry_until", "reason", "provider"])
    .where("status", "=", "waiting")
    .where("next_attempt_at", "<=", now)
    .orderBy("next_attempt_at")
    .limit(100)
    .execute();
  for (const event of due) {
    if (event.retry_until !== null && event.retry_until <= now) {
      await db
        .updateTable("integration_events")
        .set({
          status: "ignored",
          reason: `${event.reason ?? "waiting"}: gave up after 24 h`.slice(0, 1024),
          next_attempt_at: null,
          processed_at: now,
        })
        .where("id", "=", event.id)
        .where("status", "=", "waiting")
        .execute();
      continue;
    }
    try {
      await reprocessEvent(db, handlersOf(event.provider), event.integration_id, event.id, now);
    } catch (err) {
      // Another process retried it first, or a handler refused: it stays as it was.
      if (!(err instanceof ShipkeyError)) throw err;
    }
  }
  return due.length;
}

export async function listIntegrationEvents(
  db: Kysely<DB>,
  integrationId: string,
  options: { limit: number; cursor?: string; status?: IntegrationEventStatus },
): Promise<Page<IntegrationEvent>> {
  await requireIntegrationRow(db, integrationId);
  let query = db
    .selectFrom("integration_events")
    .selectAll()
    .where("integration_id", "=", integrationId)
    .orderBy("received_at", "desc")
    .orderBy("id", "desc")
    .limit(options.limit + 1);
  if (options.status !== undefined) query = query.where("status", "=", options.status);
  if (options.cursor !== undefined) {
    const { at, id } = decodeCursor(options.cursor);
    query = query.where((eb) =>
      eb.or([eb("received_at", "<", at), eb.and([eb("received_at", "=", at), eb("id", "<", id)])]),
    );
  }
  const rows = await query.execute();
  const last = rows[options.limit - 1];
  return {
    items: rows.slice(0, options.limit).map(toEventView),
    nextCursor:
      rows.length > options.limit && last ? encodeCursor(last.received_at, last.id) : null,
  };
}

export async function getIntegrationEvent(
  db: Kysely<DB>,
  integrationId: string,
  eventId: string,
): Promise<IntegrationEvent> {
  await requireIntegrationRow(db, integrationId);
  return toEventView(await requireEventRow(db, integrationId, eventId));
}

async function requireEventRow(
  db: Kysely<DB>,
  integrationId: string,
  eventId: string,
): Promise<EventRow> {
  const row = await db
    .selectFrom("integration_events")
    .selectAll()
    .where("integration_id", "=", integrationId)
    .where("id", "=", eventId)
    .executeTakeFirst();
  if (!row) {
    throw new ShipkeyError(
      "INTEGRATION_EVENT_NOT_FOUND",
      `Event ${eventId} of integration ${integrationId} not found`,
    );
  }
  return row;
}

function newRow(integrationId: string, event: InboundEvent, body: string, now: number): EventRow {
  return {
    id: newId("ine", now),
    integration_id: integrationId,
    event_key: event.key.slice(0, 255),
    event_type: event.type.slice(0, 255),
    object_id: event.objectId === null ? null : event.objectId.slice(0, 255),
    livemode: event.livemode === null ? null : event.livemode ? 1 : 0,
    status: "waiting",
    reason: null,
    body,
    occurred_at: event.occurredAt,
    received_at: now,
    processed_at: null,
    attempts: 1,
    next_attempt_at: null,
    retry_until: null,
  };
}

/** Inserts the row unless its (integration, event key) is recorded; whether it inserted. */
async function insertOnce(db: Kysely<DB>, row: EventRow): Promise<boolean> {
  const result = await db
    .insertInto("integration_events")
    .values(row)
    .onConflict((oc) => oc.columns(["integration_id", "event_key"]).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

/** A waiting event is retried hourly until 24 h after it arrived (retry_until). */
export const waitingRetry = { everyMs: 60 * 60_000, forMs: 24 * 60 * 60_000 } as const;

async function recordOutcome(
  db: Kysely<DB>,
  id: string,
  outcome: Outcome,
  now: number,
): Promise<void> {
  const waiting = outcome.status === "waiting";
  await db
    .updateTable("integration_events")
    .set((eb) => ({
      status: outcome.status,
      reason: outcome.reason.slice(0, 1024),
      processed_at: waiting ? null : now,
      next_attempt_at: waiting ? now + waitingRetry.everyMs : null,
      retry_until: waiting
        ? eb.fn.coalesce("retry_until", eb.val(now + waitingRetry.forMs))
        : eb.ref("retry_until"),
    }))
    .where("id", "=", id)
    .execute();
}

export function toEventView(row: EventRow): IntegrationEvent {
  return {
    id: row.id,
    integrationId: row.integration_id,
    eventKey: row.event_key,
    eventType: row.event_type,
    objectId: row.object_id,
    livemode: row.livemode === null ? null : row.livemode === 1,
    status: row.status,
    reason: row.reason,
    bodyKept: row.body !== null,
    attempts: row.attempts,
    occurredAt: isoOrNull(row.occurred_at),
    receivedAt: toIso(row.received_at),
    processedAt: isoOrNull(row.processed_at),
    nextAttemptAt: isoOrNull(row.next_attempt_at),
  };
}
