import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import * as actions from "../../../actions/api-keys.js";
import { createApiKey, revokeApiKey } from "../../../contracts/api-keys.js";
import { listApiKeys, newApiKeyErrors } from "../../../domain/api-keys/api-keys.js";
import { listProducts } from "../../../domain/products/products.js";
import { type Form, formBody, formFailure } from "../form-body.js";
import { adminActor, contextOf, redirectDone, redirectWith, sendPage } from "../page-kit.js";
import { apiKeysView, type ApiKeysPage } from "../views/api-keys.js";

const path = "/admin/api-keys";
const apiKeyFields = ["name", "scopes", "expiresAt", "products"];

/** The API keys page: the keys, a new key (its secret shown once), a revocation. */
export function apiKeyPages(app: FastifyInstance, db: Kysely<DB>): void {
  const render = async (
    request: FastifyRequest,
    reply: FastifyReply,
    view: Omit<ApiKeysPage, "context" | "keys" | "products">,
    status = 200,
  ) => {
    const keys = await listApiKeys(db);
    const products = await listProducts(db);
    const page = { ...view, context: contextOf(request), keys, products };
    return sendPage(reply, apiKeysView(page), status);
  };

  app.get(path, async (request, reply) => render(request, reply, { form: {}, errors: {} }));

  app.post<{ Body: Form }>(path, async (request, reply) => {
    const form = request.body;
    try {
      // No product ticked: a key for every product (null).
      const body = await formBody(createApiKey.schema.body, form, {
        dates: ["expiresAt"],
        checks: newApiKeyErrors,
      });
      const { expiresAt } = body;
      const key = await actions.createApiKey(db, adminActor(request), {
        ...body,
        expiresAt: expiresAt === null ? null : Date.parse(expiresAt),
      });
      // The secret goes to the next page once, in the sealed notice: a reload neither creates a
      // second key nor shows this one again.
      const secret = { name: key.name, key: key.key };
      return redirectWith(request, reply, path, { kind: "secret", values: secret });
    } catch (err) {
      const { status, errors } = formFailure(err, apiKeyFields);
      return render(request, reply, { form, errors }, status);
    }
  });

  // The withCreated box: the active keys created from it too.
  app.post<{ Params: { id: string }; Body: Form }>(`${path}/:id/revoke`, async (request, reply) => {
    const { withCreated } = await formBody(revokeApiKey.schema.body, request.body);
    const { id } = request.params;
    const actor = adminActor(request);
    const { alsoRevoked } = await actions.revokeApiKey(db, actor, id, { withCreated });
    return redirectDone(request, reply, path, revokedMessage(alsoRevoked.length));
  });
}

/** "API key revoked.", and how many keys created from it went with it. */
function revokedMessage(also: number): string {
  if (also === 0) return "API key revoked.";
  return `API key revoked, with the ${also === 1 ? "1 key" : `${also} keys`} created from it.`;
}
