import type { Transaction } from "kysely";
import type { DB } from "../../db/schema.js";
import type { IntegrationEventStatus } from "../../contracts/vocabulary.js";
import type { InboundEvent } from "./inbound-event.js";
import type { IntegrationRow } from "./integrations.js";

/** What processing an event came to; `reason` says what it did or why it did nothing. */
export interface Outcome {
  status: IntegrationEventStatus;
  reason: string;
}

export interface EventContext {
  integration: IntegrationRow & { product_slug: string };
  event: InboundEvent;
  now: number;
}

/** One event type's effects, run in the transaction that records the event. */
export type EventHandler = (trx: Transaction<DB>, context: EventContext) => Promise<Outcome>;

/** The handlers of one provider, by event type. */
export type EventHandlers = Readonly<Record<string, EventHandler>>;

export const ignored = (reason: string): Outcome => ({ status: "ignored", reason });
export const processed = (reason: string): Outcome => ({ status: "processed", reason });

/**
 * An event's effects: none for an event in the other mode than the integration's, or of a type
 * Shipkey does not act on; else its provider's handler's. Runs in the caller's transaction, the
 * one that records the event, so the effects commit exactly once with it.
 */
export async function processEvent(
  trx: Transaction<DB>,
  handlers: EventHandlers,
  context: EventContext,
): Promise<Outcome> {
  const { integration, event } = context;
  if (event.livemode !== null && event.livemode !== (integration.mode === "live")) {
    return ignored(
      event.livemode
        ? "a live-mode event on an integration in test mode"
        : "a test-mode event on an integration in live mode",
    );
  }
  const handler = Object.hasOwn(handlers, event.type) ? handlers[event.type] : undefined;
  if (handler === undefined) return ignored(`Shipkey does not act on ${event.type} events`);
  return handler(trx, context);
}
