import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import { receiveIntegrationEvent } from "../../contracts/integrations.js";
import { integrationLimits, integrationProviders } from "../../contracts/vocabulary.js";
import type { DB } from "../../db/schema.js";
import { receivePaymentEvent } from "../../actions/integration-events.js";
import { readInboundEvent } from "../../domain/integrations/inbound-event.js";
import {
  openIntegrationSecrets,
  requireIntegrationRow,
} from "../../domain/integrations/integrations.js";
import { verifySignature } from "../../domain/integrations/signatures.js";
import type { MasterKey } from "../../domain/signing/key-material.js";
import { ShipkeyError } from "../../errors.js";
import { routeSchema, typed } from "../contract-route.js";

/** How the integrations' webhooks judge time (tests bring their own clock). */
export interface IntegrationOptions {
  /** PADDLE_SIGNATURE_TOLERANCE in seconds (default 5). */
  paddleToleranceSeconds?: number;
  now?: () => number;
  /** How often waiting events are looked at (the server: every minute); off unless given. */
  retryEveryMs?: number;
}

/**
 * The providers' webhook, in a scope of its own: the only routes whose body is kept raw (a
 * Buffer of at most integrationLimits.webhookBodyBytes, whatever its Content-Type), because the
 * signature is over the exact bytes sent. Verified before anything is read from it.
 */
export function integrationWebhookRoutes(
  app: FastifyInstance,
  db: Kysely<DB>,
  masterKey: MasterKey,
  options: IntegrationOptions,
): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    "*",
    { parseAs: "buffer", bodyLimit: integrationLimits.webhookBodyBytes },
    (_request, body, done) => done(null, body),
  );
  const now = options.now ?? Date.now;
  const paddleToleranceSeconds =
    options.paddleToleranceSeconds ?? integrationLimits.defaultPaddleToleranceSeconds;

  typed(app).post(
    receiveIntegrationEvent.url,
    { schema: routeSchema(receiveIntegrationEvent) },
    async (request) => {
      const { provider, id } = request.params;
      const integration = await requireIntegrationRow(db, id).catch((err: unknown) => {
        throw err instanceof ShipkeyError ? notFound(id) : err;
      });
      if (!integrationProviders.some((p) => p === provider) || integration.provider !== provider) {
        throw notFound(id);
      }
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const secrets = await openIntegrationSecrets(db, masterKey, id);
      const at = now();
      verifySignature(integration.provider, body, request.headers, secrets, {
        paddleToleranceSeconds,
        now: at,
      });
      const event = readInboundEvent(integration.provider, body);
      const status = await receivePaymentEvent(db, integration, event, body.toString("utf8"), at);
      return { received: true as const, status };
    },
  );
}

const notFound = (id: string) =>
  new ShipkeyError("INTEGRATION_NOT_FOUND", `Integration ${id} not found`);
