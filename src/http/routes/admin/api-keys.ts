import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import { apiKeyScopes, listApiKeys } from "../../../domain/api-keys/api-keys.js";
import { createApiKeyAudited, revokeApiKeyAudited } from "../../../domain/audit/audited-actions.js";
import { ShipkeyError } from "../../../errors.js";
import { parseIsoTimestamp } from "../../../lib/time.js";
import { actorOf, productIdsOf, requireScope } from "../../admin-auth.js";

export function adminApiKeyRoutes(app: FastifyInstance, db: Kysely<DB>): void {
  // Listing shows no secret, but who holds which scopes is itself sensitive: api-keys:write.
  const write = requireScope(db, "api-keys:write");

  // A key limited to products lists only keys limited to some of its products.
  app.get("/api/admin/api-keys", { onRequest: write }, async (request) => ({
    items: await listApiKeys(db, productIdsOf(request)),
  }));

  app.post<{
    Body: { name: string; scopes: string[]; expiresAt?: string | null; products?: string[] | null };
  }>(
    "/api/admin/api-keys",
    {
      onRequest: write,
      config: { secretAnswer: true },
      schema: {
        description:
          "An API key may create only keys holding a subset of its scopes and expiring no later " +
          "than itself (else 403 SCOPE_NOT_HELD) and, if it is limited to products, limited to " +
          "some of them (else 403 PRODUCT_NOT_IN_KEY); a signed-in admin may create any key.",
        body: {
          type: "object",
          required: ["name", "scopes"],
          additionalProperties: false,
          properties: {
            name: { type: "string", minLength: 1, maxLength: 255 },
            scopes: {
              type: "array",
              minItems: 1,
              maxItems: 20,
              items: { type: "string", enum: apiKeyScopes },
            },
            expiresAt: { type: ["string", "null"], maxLength: 64 },
            products: {
              type: ["array", "null"],
              description:
                "Slugs of the products the key is limited to (each must exist); omitted or " +
                "null: every product. A limited key is refused (403 PRODUCT_NOT_IN_KEY) on " +
                "any other product, and its lists hold only its products.",
              minItems: 1,
              maxItems: 100,
              items: { type: "string", minLength: 1, maxLength: 255 },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const { name, scopes, expiresAt, products } = request.body;
      let expiresAtMs: number | null = null;
      if (expiresAt !== undefined && expiresAt !== null) {
        expiresAtMs = parseIsoTimestamp(expiresAt);
        if (expiresAtMs === null) {
          throw new ShipkeyError(
            "INVALID_FIELD_VALUE",
            "expiresAt must be an ISO 8601 timestamp with a zone, or null",
            { field: "expiresAt" },
          );
        }
      }
      // The secret goes to the caller once and never into the audit log.
      const created = await createApiKeyAudited(db, actorOf(request), {
        name,
        scopes,
        expiresAt: expiresAtMs,
        products,
      });
      return reply.status(201).send(created);
    },
  );

  app.post<{ Params: { id: string } }>(
    "/api/admin/api-keys/:id/revoke",
    {
      onRequest: write,
      schema: {
        description:
          "An API key may revoke only keys whose scopes it holds (else 403 SCOPE_NOT_HELD) and, " +
          "if it is limited to products, keys limited to some of them (else 403 " +
          "PRODUCT_NOT_IN_KEY); a signed-in admin may revoke any key.",
        params: {
          type: "object",
          required: ["id"],
          properties: { id: { type: "string", maxLength: 64 } },
        },
      },
    },
    async (request) => {
      return revokeApiKeyAudited(db, actorOf(request), request.params.id);
    },
  );
}
