import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import * as actions from "../../../actions/integrations.js";
import { replayPaymentEvent } from "../../../actions/integration-events.js";
import * as contracts from "../../../contracts/integrations.js";
import { listIntegrationEvents } from "../../../domain/integrations/event-ledger.js";
import { getIntegration } from "../../../domain/integrations/integrations.js";
import { listPriceMappings } from "../../../domain/integrations/prices.js";
import { listPlans } from "../../../domain/plans/plans.js";
import type { MasterKey } from "../../../domain/signing/key-material.js";
import { requestOrigin } from "../../public-origin.js";
import { type Form, formBody, formFailure, text } from "../form-body.js";
import { adminActor, contextOf, redirectDone, sendPage } from "../page-kit.js";
import { type IntegrationPage, integrationPath, integrationView } from "../views/integration.js";

const path = "/admin/integrations";
type IdRequest = FastifyRequest<{ Params: { id: string }; Body: Form | undefined }>;

/** One integration's page: its settings, its secrets, its price mappings, its latest events. */
export function integrationDetailPages(
  app: FastifyInstance,
  db: Kysely<DB>,
  masterKey: MasterKey,
  now: () => number = Date.now,
): void {
  const origin = (request: FastifyRequest) => requestOrigin(request) ?? "";
  const render = async (
    request: FastifyRequest,
    reply: FastifyReply,
    id: string,
    view: Pick<IntegrationPage, "form" | "errors">,
    status = 200,
  ) => {
    const integration = await getIntegration(db, id, origin(request));
    const prices = await listPriceMappings(db, id);
    const plans = await listPlans(db, integration.product);
    const { items: events } = await listIntegrationEvents(db, id, { limit: 50 });
    const page = { ...view, context: contextOf(request), integration, prices, plans, events };
    return sendPage(reply, integrationView(page), status);
  };
  /** A form's POST: its action, then back to the page with what it did, or the form refused. */
  const post = (
    url: string,
    fields: readonly string[],
    act: (request: IdRequest, form: Form) => Promise<string>,
  ) =>
    app.post<{ Params: { id: string }; Body: Form | undefined }>(url, async (request, reply) => {
      const { id } = request.params;
      const form = request.body ?? {};
      try {
        const done = await act(request, form);
        return redirectDone(request, reply, integrationPath(id), done);
      } catch (err) {
        const { status, errors } = formFailure(err, fields);
        return render(request, reply, id, { form: { ...form, secret: "" }, errors }, status);
      }
    });

  app.get<{ Params: { id: string } }>(`${path}/:id`, async (request, reply) =>
    render(request, reply, request.params.id, { form: null, errors: {} }),
  );

  post(`${path}/:id/edit`, ["mode", "description"], async (request, form) => {
    const changes = await formBody(contracts.updateIntegration.schema.body, form, {
      fields: ["mode", "description"],
    });
    const { id } = request.params;
    await actions.changeIntegration(db, adminActor(request), id, changes, origin(request));
    return "Integration saved.";
  });

  post(`${path}/:id/secrets`, ["secret"], async (request, form) => {
    const { secret } = await formBody(contracts.addIntegrationSecret.schema.body, form, {
      verbatim: ["secret"],
    });
    const actor = adminActor(request);
    const { id } = request.params;
    await actions.addSigningSecret(db, actor, masterKey, id, secret, origin(request));
    return "Secret added: events signed with either secret are accepted until one is removed.";
  });

  post(`${path}/:id/secrets/remove`, [], async (request, form) => {
    const { id } = request.params;
    const secretId = text(form, "secretId");
    await actions.removeSigningSecret(db, adminActor(request), id, secretId, origin(request));
    return "Secret removed.";
  });

  priceAndEventPosts(db, post, now);
}

type Post = (
  url: string,
  fields: readonly string[],
  act: (request: IdRequest, form: Form) => Promise<string>,
) => unknown;

/** The price mappings' forms and an event's Replay button. */
function priceAndEventPosts(db: Kysely<DB>, post: Post, now: () => number): void {
  const priceFields = ["priceId", "planId", "quantityMeans"] as const;
  post(`${path}/:id/prices`, priceFields, async (request, form) => {
    const { id } = request.params;
    const [{ priceId }, body] = await Promise.all([
      formBody(contracts.setPriceMapping.schema.params, form, { fields: ["priceId"] }),
      formBody(contracts.setPriceMapping.schema.body, form),
    ]);
    const input = { priceId, planId: body.planId, quantityMeans: body.quantityMeans ?? "seats" };
    await actions.mapPriceToPlan(db, adminActor(request), id, input);
    return `Price ${priceId} mapped: replay the events ignored for want of it.`;
  });

  post(`${path}/:id/prices/remove`, [], async (request, form) => {
    const priceId = text(form, "priceId");
    await actions.unmapPrice(db, adminActor(request), request.params.id, priceId);
    return `Price ${priceId} unmapped.`;
  });

  post(`${path}/:id/events/replay`, [], async (request, form) => {
    const eventId = text(form, "eventId");
    const event = await replayPaymentEvent(
      db,
      adminActor(request),
      request.params.id,
      eventId,
      now(),
    );
    return `Event replayed: ${event.status}${event.reason === null ? "" : ` (${event.reason})`}.`;
  });
}
