import type { Kysely } from "kysely";
import * as contracts from "../../../contracts/webhooks.js";
import { pageLimits, webhookLimits } from "../../../contracts/vocabulary.js";
import type { DB } from "../../../db/schema.js";
import * as actions from "../../../actions/webhooks.js";
import { getWebhookDelivery, listWebhookDeliveries } from "../../../domain/webhooks/deliveries.js";
import { getWebhookEndpoint, listWebhookEndpoints } from "../../../domain/webhooks/endpoints.js";
import type { MasterKey } from "../../../domain/signing/key-material.js";
import { actorHoldsScope } from "../../../domain/api-keys/key-authority.js";
import { refuseLimitedKeys, requireActor } from "../../admin-auth.js";
import { adminRoute, type App } from "../../contract-route.js";
import type { WebhookWorker } from "../../webhook-delivery.js";
import type { Contract, ContractSchema } from "../../../contracts/kit.js";

export function adminWebhookRoutes(
  app: App,
  db: Kysely<DB>,
  masterKey: MasterKey,
  worker: WebhookWorker,
): void {
  const route = <S extends ContractSchema>(c: Contract<S>) => ({
    ...adminRoute(db, c),
    preValidation: refuseLimitedKeys("webhook endpoints"),
  });
  const policy = { allowPrivate: worker.allowPrivate };

  app.get(contracts.listWebhookEndpoints.url, route(contracts.listWebhookEndpoints), async () => ({
    items: await listWebhookEndpoints(db),
  }));

  app.post(
    contracts.createWebhookEndpoint.url,
    { ...route(contracts.createWebhookEndpoint), config: { secretAnswer: true } },
    async (request, reply) => {
      const created = await actions.createWebhookEndpoint(
        db,
        requireActor(request),
        masterKey,
        request.body,
        policy,
        request.idempotencyClaim,
      );
      return reply.status(201).send(created);
    },
  );

  app.get(contracts.getWebhookEndpoint.url, route(contracts.getWebhookEndpoint), async (request) =>
    getWebhookEndpoint(db, request.params.id),
  );

  app.patch(
    contracts.updateWebhookEndpoint.url,
    route(contracts.updateWebhookEndpoint),
    async (request) => {
      const endpoint = await actions.updateWebhookEndpoint(
        db,
        requireActor(request),
        request.params.id,
        request.body,
        policy,
        request.idempotencyClaim,
      );
      if (endpoint.enabled) worker.wake();
      return endpoint;
    },
  );

  app.delete(
    contracts.deleteWebhookEndpoint.url,
    route(contracts.deleteWebhookEndpoint),
    async (request) => {
      await actions.deleteWebhookEndpoint(
        db,
        requireActor(request),
        request.params.id,
        request.idempotencyClaim,
      );
      return { deleted: true as const, id: request.params.id };
    },
  );

  app.post(
    contracts.rotateWebhookSecret.url,
    { ...route(contracts.rotateWebhookSecret), config: { secretAnswer: true } },
    async (request) =>
      actions.rotateWebhookSecret(
        db,
        requireActor(request),
        masterKey,
        request.params.id,
        request.body?.graceSeconds ?? webhookLimits.defaultGraceSeconds,
        worker.now(),
        request.idempotencyClaim,
      ),
  );

  app.get(
    contracts.listWebhookDeliveries.url,
    route(contracts.listWebhookDeliveries),
    async (request) => {
      const { limit, cursor, status } = request.query;
      return listWebhookDeliveries(db, request.params.id, {
        limit: Math.min(limit === undefined ? pageLimits.default : Number(limit), pageLimits.max),
        ...(cursor === undefined ? {} : { cursor }),
        ...(status === undefined ? {} : { status }),
      });
    },
  );

  // Without licenses:read, the payload without license keys and customers (docs/webhooks.md).
  app.get(contracts.getWebhookDelivery.url, route(contracts.getWebhookDelivery), async (request) =>
    getWebhookDelivery(db, request.params.id, request.params.eventId, {
      licensesRead: await actorHoldsScope(db, requireActor(request), "licenses:read"),
    }),
  );

  app.post(
    contracts.redeliverWebhook.url,
    route(contracts.redeliverWebhook),
    async (request, reply) => {
      const delivery = await actions.redeliverWebhook(
        db,
        requireActor(request),
        request.params.id,
        request.params.eventId,
        worker.now(),
        request.idempotencyClaim,
      );
      worker.wake();
      return reply.status(202).send(delivery);
    },
  );

  app.post(
    contracts.sendWebhookTest.url,
    route(contracts.sendWebhookTest),
    async (request, reply) => {
      const delivery = await actions.sendWebhookTest(
        db,
        requireActor(request),
        request.params.id,
        worker.now(),
        request.idempotencyClaim,
      );
      worker.wake();
      return reply.status(202).send(delivery);
    },
  );
}
