import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import * as actions from "../../../actions/webhooks.js";
import {
  createWebhookEndpoint,
  redeliverWebhook,
  rotateWebhookSecret,
  updateWebhookEndpoint,
  type WebhookEndpoint,
} from "../../../contracts/webhooks.js";
import { getWebhookDelivery, listWebhookDeliveries } from "../../../domain/webhooks/deliveries.js";
import {
  endpointSettingsErrors,
  type EndpointSettings,
  getWebhookEndpoint,
  listWebhookEndpoints,
  newEndpointErrors,
} from "../../../domain/webhooks/endpoints.js";
import type { MasterKey } from "../../../domain/signing/key-material.js";
import { ShipkeyError } from "../../../errors.js";
import type { WebhookWorker } from "../../webhook-delivery.js";
import { type Form, formBody, formFailure, text } from "../form-body.js";
import { adminActor, contextOf, redirectDone, redirectWith, sendPage } from "../page-kit.js";
import {
  endpointPath,
  type EndpointPage,
  type EndpointsPage,
  endpointsView,
  endpointView,
} from "../views/webhooks.js";

const path = "/admin/webhooks";
const endpointFields = ["url", "events", "products", "description"] as const;
const settingsFields = [...endpointFields, "enabled"] as const;

/** The webhook endpoints: the list and a new endpoint (its secret shown once), then each one. */
export function webhookPages(
  app: FastifyInstance,
  db: Kysely<DB>,
  masterKey: MasterKey,
  worker: WebhookWorker,
): void {
  const policy = () => ({ allowPrivate: worker.allowPrivate });
  const renderList = async (
    request: FastifyRequest,
    reply: FastifyReply,
    view: Omit<EndpointsPage, "context" | "endpoints">,
    status = 200,
  ) => {
    const endpoints = await listWebhookEndpoints(db);
    const page = { ...view, context: contextOf(request), endpoints };
    return sendPage(reply, endpointsView(page), status);
  };

  app.get(path, async (request, reply) => renderList(request, reply, { form: {}, errors: {} }));

  app.post<{ Body: Form }>(path, async (request, reply) => {
    const form = request.body;
    try {
      const input = await formBody(createWebhookEndpoint.schema.body, form, {
        fields: endpointFields,
        checks: (body) => newEndpointErrors(db, body, policy()),
      });
      const actor = adminActor(request);
      const endpoint = await actions.createWebhookEndpoint(db, actor, masterKey, input, policy());
      // Shown once, on the next page, from the sealed notice.
      const values = { url: endpoint.url, secret: endpoint.secret };
      return redirectWith(request, reply, path, { kind: "secret", values });
    } catch (err) {
      const { status, errors } = formFailure(err, endpointFields);
      return renderList(request, reply, { form, errors }, status);
    }
  });

  endpointPages(app, db, masterKey, worker);
}

/** One endpoint's page and its settings form. */
function endpointPages(
  app: FastifyInstance,
  db: Kysely<DB>,
  masterKey: MasterKey,
  worker: WebhookWorker,
): void {
  const policy = () => ({ allowPrivate: worker.allowPrivate });
  const renderEndpoint = async (
    request: FastifyRequest,
    reply: FastifyReply,
    id: string,
    view: Omit<EndpointPage, "context" | "endpoint" | "deliveries">,
    status = 200,
  ) => {
    const endpoint = await getWebhookEndpoint(db, id);
    const { items } = await listWebhookDeliveries(db, id, { limit: 50 });
    const context = contextOf(request);
    return sendPage(reply, endpointView({ ...view, context, endpoint, deliveries: items }), status);
  };

  app.get<{ Params: { id: string }; Querystring: Form }>(`${path}/:id`, async (request, reply) => {
    const { id } = request.params;
    const show = text(request.query, "show");
    // A signed-in admin holds every scope, licenses:read too: the payload in full.
    const shown =
      show === "" ? null : await getWebhookDelivery(db, id, show, { licensesRead: true });
    return renderEndpoint(request, reply, id, { shown, form: null, errors: {} });
  });

  app.post<{ Params: { id: string }; Body: Form | undefined }>(
    `${path}/:id/edit`,
    async (request, reply) => {
      const { id } = request.params;
      const form = request.body ?? {};
      const endpoint = await getWebhookEndpoint(db, id);
      try {
        const settings = await formBody(updateWebhookEndpoint.schema.body, form, {
          fields: settingsFields,
          checks: (body) => endpointSettingsErrors(db, changesFrom(endpoint, body), policy()),
        });
        const changes = changesFrom(endpoint, settings);
        if (Object.keys(changes).length === 0) {
          const same = "Nothing to save: the settings are as they were.";
          return redirectDone(request, reply, endpointPath(id), same);
        }
        const actor = adminActor(request);
        const updated = await actions.updateWebhookEndpoint(db, actor, id, changes, policy());
        if (updated.enabled) worker.wake();
        return redirectDone(request, reply, endpointPath(id), "Endpoint saved.");
      } catch (err) {
        const { status, errors } = formFailure(err, settingsFields);
        return renderEndpoint(request, reply, id, { shown: null, form, errors }, status);
      }
    },
  );

  endpointButtons(app, db, masterKey, worker);
}

/** An endpoint's buttons: a new secret (shown once), delete, enable, disable, test, redeliver. */
function endpointButtons(
  app: FastifyInstance,
  db: Kysely<DB>,
  masterKey: MasterKey,
  worker: WebhookWorker,
): void {
  // The new secret, shown once on the endpoint's page; never in a URL, a log or the audit log.
  app.post<{ Params: { id: string }; Body: Form | undefined }>(
    `${path}/:id/rotate-secret`,
    async (request, reply) => {
      const { id } = request.params;
      const { graceSeconds } = await formBody(rotateWebhookSecret.schema.body, request.body);
      const actor = adminActor(request);
      const now = worker.now();
      const rotated = await actions.rotateWebhookSecret(
        db,
        actor,
        masterKey,
        id,
        graceSeconds,
        now,
      );
      const values = {
        secret: rotated.secret,
        previousSecretExpiresAt: rotated.previousSecretExpiresAt ?? "",
      };
      return redirectWith(request, reply, endpointPath(id), { kind: "secret", values });
    },
  );

  app.post<{ Params: { id: string; action: string }; Body: Form }>(
    `${path}/:id/:action`,
    async (request, reply) => {
      const done = await endpointAction(db, worker, request);
      worker.wake();
      if (done === null) return reply.redirect(path, 303);
      return redirectDone(request, reply, endpointPath(request.params.id), done);
    },
  );
}

/** An endpoint's button: what it did, in words (null: deleted); an unknown one is no page. */
async function endpointAction(
  db: Kysely<DB>,
  worker: WebhookWorker,
  request: FastifyRequest<{ Params: { id: string; action: string }; Body: Form }>,
): Promise<string | null> {
  const { id, action } = request.params;
  const actor = adminActor(request);
  const policy = { allowPrivate: worker.allowPrivate };
  switch (action) {
    case "delete":
      await actions.deleteWebhookEndpoint(db, actor, id);
      return null;
    case "enable":
      await actions.updateWebhookEndpoint(db, actor, id, { enabled: true }, policy);
      return "Endpoint enabled: its pending deliveries go out again.";
    case "disable":
      await actions.updateWebhookEndpoint(db, actor, id, { enabled: false }, policy);
      return "Endpoint disabled: deliveries wait until it is enabled.";
    case "test":
      await actions.sendWebhookTest(db, actor, id, worker.now());
      return "Test event queued.";
    case "redeliver": {
      const reading = { fields: ["eventId"] } as const;
      const { eventId } = await formBody(redeliverWebhook.schema.params, request.body, reading);
      await actions.redeliverWebhook(db, actor, id, eventId, worker.now());
      return "Delivery queued again.";
    }
  }
  throw new ShipkeyError("ROUTE_NOT_FOUND", "There is no such page in the dashboard.");
}

/**
 * The settings the edit form changes: only those that differ from the endpoint's, so that saving
 * an enabled endpoint as it is does not reset its failures, and the audit entry names the changes.
 */
function changesFrom(
  endpoint: WebhookEndpoint,
  form: Required<EndpointSettings>,
): EndpointSettings {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const { url, events, products, enabled, description } = form;
  return {
    ...(url === endpoint.url ? {} : { url }),
    ...(same([...events].sort(), [...endpoint.events].sort()) ? {} : { events }),
    ...(same(products, endpoint.products) ? {} : { products }),
    ...(description === endpoint.description ? {} : { description }),
    ...(enabled === endpoint.enabled ? {} : { enabled }),
  };
}
