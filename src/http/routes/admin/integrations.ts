import type { FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import * as contracts from "../../../contracts/integrations.js";
import type { Contract, ContractSchema } from "../../../contracts/kit.js";
import { pageLimits } from "../../../contracts/vocabulary.js";
import type { DB } from "../../../db/schema.js";
import {
  addSigningSecret,
  changeIntegration,
  connectPaymentProvider,
  disconnectPaymentProvider,
  mapPriceToPlan,
  removeSigningSecret,
  unmapPrice,
} from "../../../actions/integrations.js";
import { listPriceMappings } from "../../../domain/integrations/prices.js";
import { replayPaymentEvent } from "../../../actions/integration-events.js";
import { getIntegration, listIntegrations } from "../../../domain/integrations/integrations.js";
import {
  getIntegrationEvent,
  listIntegrationEvents,
} from "../../../domain/integrations/event-ledger.js";
import type { MasterKey } from "../../../domain/signing/key-material.js";
import { refuseLimitedKeys, requireActor } from "../../admin-auth.js";
import { adminRoute, type App } from "../../contract-route.js";
import { requestOrigin } from "../../public-origin.js";
import type { IntegrationOptions } from "../integration-webhook.js";

export function adminIntegrationRoutes(
  app: App,
  db: Kysely<DB>,
  masterKey: MasterKey,
  options: IntegrationOptions,
): void {
  const route = <S extends ContractSchema>(c: Contract<S>) => ({
    ...adminRoute(db, c),
    preValidation: refuseLimitedKeys("payment integrations"),
  });
  const origin = (request: FastifyRequest) => requestOrigin(request) ?? "";

  app.get(contracts.listIntegrations.url, route(contracts.listIntegrations), async (request) => ({
    items: await listIntegrations(db, origin(request)),
  }));

  app.post(
    contracts.createIntegration.url,
    route(contracts.createIntegration),
    async (request, reply) =>
      reply
        .status(201)
        .send(
          await connectPaymentProvider(
            db,
            requireActor(request),
            masterKey,
            request.body,
            origin(request),
            request.idempotencyClaim,
          ),
        ),
  );

  app.get(contracts.getIntegration.url, route(contracts.getIntegration), async (request) =>
    getIntegration(db, request.params.id, origin(request)),
  );

  app.patch(contracts.updateIntegration.url, route(contracts.updateIntegration), async (request) =>
    changeIntegration(
      db,
      requireActor(request),
      request.params.id,
      request.body,
      origin(request),
      request.idempotencyClaim,
    ),
  );

  app.delete(
    contracts.deleteIntegration.url,
    route(contracts.deleteIntegration),
    async (request) => {
      await disconnectPaymentProvider(
        db,
        requireActor(request),
        request.params.id,
        request.idempotencyClaim,
      );
      return { deleted: true as const, id: request.params.id };
    },
  );

  app.post(
    contracts.addIntegrationSecret.url,
    route(contracts.addIntegrationSecret),
    async (request, reply) =>
      reply
        .status(201)
        .send(
          await addSigningSecret(
            db,
            requireActor(request),
            masterKey,
            request.params.id,
            request.body.secret,
            origin(request),
            request.idempotencyClaim,
          ),
        ),
  );

  app.delete(
    contracts.removeIntegrationSecret.url,
    route(contracts.removeIntegrationSecret),
    async (request) =>
      removeSigningSecret(
        db,
        requireActor(request),
        request.params.id,
        request.params.secretId,
        origin(request),
        request.idempotencyClaim,
      ),
  );

  app.get(
    contracts.listIntegrationEvents.url,
    route(contracts.listIntegrationEvents),
    async (request) => {
      const { limit, cursor, status } = request.query;
      return listIntegrationEvents(db, request.params.id, {
        limit: Math.min(limit === undefined ? pageLimits.default : Number(limit), pageLimits.max),
        ...(cursor === undefined ? {} : { cursor }),
        ...(status === undefined ? {} : { status }),
      });
    },
  );

  app.get(
    contracts.getIntegrationEvent.url,
    route(contracts.getIntegrationEvent),
    async (request) => getIntegrationEvent(db, request.params.id, request.params.eventId),
  );

  app.post(
    contracts.replayIntegrationEvent.url,
    route(contracts.replayIntegrationEvent),
    async (request) =>
      replayPaymentEvent(
        db,
        requireActor(request),
        request.params.id,
        request.params.eventId,
        (options.now ?? Date.now)(),
        request.idempotencyClaim,
      ),
  );

  app.get(contracts.listPriceMappings.url, route(contracts.listPriceMappings), async (request) => ({
    items: await listPriceMappings(db, request.params.id),
  }));

  app.put(contracts.setPriceMapping.url, route(contracts.setPriceMapping), async (request) =>
    mapPriceToPlan(
      db,
      requireActor(request),
      request.params.id,
      {
        priceId: request.params.priceId,
        planId: request.body.planId,
        quantityMeans: request.body.quantityMeans ?? "seats",
      },
      request.idempotencyClaim,
    ),
  );

  app.delete(
    contracts.removePriceMapping.url,
    route(contracts.removePriceMapping),
    async (request) => {
      await unmapPrice(
        db,
        requireActor(request),
        request.params.id,
        request.params.priceId,
        request.idempotencyClaim,
      );
      return { deleted: true as const, priceId: request.params.priceId };
    },
  );
}
