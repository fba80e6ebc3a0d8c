import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import { type Actor, withAudit } from "../domain/audit/audit-log.js";
import { reprocessEvent } from "../domain/integrations/event-ledger.js";
import { handlersOf } from "../domain/integrations/handlers.js";
import { requireIntegrationRow } from "../domain/integrations/integrations.js";

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
) =>
  withAudit(
    db,
    actor,
    "integration.replay_event",
    async (trx) => {
      const integration = await requireIntegrationRow(trx, integrationId);
      return reprocessEvent(trx, handlersOf(integration.provider), integrationId, eventId, now);
    },
    (event) => ({
      target: { type: "integration", id: integrationId },
      details: { eventId, eventType: event.eventType, status: event.status },
    }),
  );
