import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import { connectPaymentProvider } from "../../../actions/integrations.js";
import { createIntegration } from "../../../contracts/integrations.js";
import { listIntegrations } from "../../../domain/integrations/integrations.js";
import type { MasterKey } from "../../../domain/signing/key-material.js";
import { requestOrigin } from "../../public-origin.js";
import { type Form, formBody, formFailure } from "../form-body.js";
import { adminActor, contextOf, redirectDone, sendPage } from "../page-kit.js";
import { integrationDetailPages } from "./integration.js";
import { type IntegrationsPage, integrationsView } from "../views/integrations.js";

const path = "/admin/integrations";
const newFields = ["product", "provider", "mode", "description", "secret"] as const;

/** The payment integrations: the list and a new integration (its secret never shown again). */
export function integrationPages(app: FastifyInstance, db: Kysely<DB>, masterKey: MasterKey): void {
  const origin = (request: FastifyRequest) => requestOrigin(request) ?? "";
  const renderList = async (
    request: FastifyRequest,
    reply: FastifyReply,
    view: Omit<IntegrationsPage, "context" | "integrations">,
    status = 200,
  ) => {
    const integrations = await listIntegrations(db, origin(request));
    const page = { ...view, context: contextOf(request), integrations };
    return sendPage(reply, integrationsView(page), status);
  };

  app.get(path, async (request, reply) => renderList(request, reply, { form: {}, errors: {} }));

  app.post<{ Body: Form }>(path, async (request, reply) => {
    const form = request.body;
    try {
      const input = await formBody(createIntegration.schema.body, form, {
        fields: newFields,
        verbatim: ["secret"],
      });
      const actor = adminActor(request);
      const created = await connectPaymentProvider(db, actor, masterKey, input, origin(request));
      // The secret is sealed and never shown again: the notice names only the URL to paste.
      const done = `Integration created: paste ${created.webhookUrl} into the provider's dashboard.`;
      return redirectDone(request, reply, path, done);
    } catch (err) {
      const { status, errors } = formFailure(err, newFields);
      return renderList(request, reply, { form: { ...form, secret: "" }, errors }, status);
    }
  });

  integrationDetailPages(app, db, masterKey);
}
