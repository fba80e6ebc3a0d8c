import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import type { IdempotencyClaim } from "../domain/idempotency/idempotency-keys.js";
import { type Actor, withAudit } from "../domain/audit/audit-log.js";
import {
  receiveInboundEvent,
  reprocessEvent,
  retryWaitingEvents,
} from "../domain/integrations/event-ledger.js";
import type { InboundEvent } from "../domain/integrations/inbound-event.js";
import { type IntegrationRow, requireIntegrationRow } from "../domain/integrations/integrations.js";
import { saleEventHandlers } from "./sale-events/index.js";

/**
 * A verified event from a provider, recorded once and processed with its effects (each with
 * its own audit entry and webhook event) in one transaction.
 */
export const receivePaymentEvent = (
  db: Kysely<DB>,
  integration: IntegrationRow & { product_slug: string },
  event: InboundEvent,
  body: string,
  now: number,
) =>
  receiveInboundEvent(db, saleEventHandlers()[integration.provider], integration, event, body, now);

/**
 * An ignored or waiting event processed again, from its kept raw body (verified when it
 * arrived), with its effects and the audit entry in one transaction.
 */
export const replayPaymentEvent = (
  db: Kysely<DB>,
  actor: Actor,
  integrationId: string,
  eventId: string,
  now = Date.now(),
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "integration.replay_event",
    async (trx) => {
      const integration = await requireIntegrationRow(trx, integrationId);
      const handlers = saleEventHandlers()[integration.provider];
      return reprocessEvent(trx, handlers, integrationId, eventId, now);
    },
    (event) => ({
      target: { type: "integration", id: integrationId },
      details: { eventId, eventType: event.eventType, status: event.status },
    }),
    idempotency,
  );

/** Waiting events retried (hourly each, for 24 h): the maintenance timer's task. */
export const retryWaitingPaymentEvents = (db: Kysely<DB>, now = Date.now()) => {
  const handlers = saleEventHandlers();
  return retryWaitingEvents(db, (provider) => handlers[provider], now);
};
