import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import {
  createProductAudited,
  deleteProductAudited,
  updateProductAudited,
} from "../../../domain/audit/audited-actions.js";
import {
  listProducts,
  requireProduct,
  type UpdateDelivery,
} from "../../../domain/products/products.js";
import { actorOf, requireScope } from "../../admin-auth.js";
import { failure } from "../public-schemas.js";
import { productSchema, slugParam } from "./schemas.js";

const productResponse = (status: 200 | 201) => ({
  [status]: productSchema,
  "4xx": failure(),
  "5xx": failure(),
});

export function adminProductRoutes(app: FastifyInstance, db: Kysely<DB>): void {
  const read = requireScope(db, "products:read");
  const write = requireScope(db, "products:write");

  app.get(
    "/api/admin/products",
    {
      onRequest: read,
      schema: {
        response: {
          200: { type: "object", properties: { items: { type: "array", items: productSchema } } },
          "4xx": failure(),
          "5xx": failure(),
        },
      },
    },
    async () => ({ items: await listProducts(db) }),
  );

  app.post<{ Body: { slug: string; name: string } }>(
    "/api/admin/products",
    {
      onRequest: write,
      schema: {
        body: {
          type: "object",
          required: ["slug", "name"],
          additionalProperties: false,
          properties: {
            slug: { type: "string", minLength: 1, maxLength: 255 },
            name: { type: "string", minLength: 1, maxLength: 255 },
          },
        },
        response: productResponse(201),
      },
    },
    async (request, reply) => {
      const product = await createProductAudited(db, actorOf(request), request.body);
      return reply.status(201).send(product);
    },
  );

  app.get<{ Params: { slug: string } }>(
    "/api/admin/products/:slug",
    { onRequest: read, schema: { params: slugParam, response: productResponse(200) } },
    async (request) => requireProduct(db, request.params.slug),
  );

  app.patch<{
    Params: { slug: string };
    Body: { name?: string; tauriPublicKey?: string | null } & UpdateDelivery;
  }>(
    "/api/admin/products/:slug",
    {
      onRequest: write,
      schema: {
        params: slugParam,
        body: {
          type: "object",
          description: "At least one setting; each given one is changed, all in one transaction",
          minProperties: 1,
          additionalProperties: false,
          properties: {
            name: { type: "string", minLength: 1, maxLength: 255 },
            updatesRequireLicense: {
              type: "boolean",
              description: "Feeds and downloads answer only machines activated on a usable license",
            },
            downloadRedirects: {
              type: "boolean",
              description: "Feeds hand out the counted /api/downloads redirect",
            },
            tauriPublicKey: {
              type: ["string", "null"],
              maxLength: 1024,
              description:
                "tauri.conf.json's plugins.updater.pubkey (base64 of the minisign public key " +
                "file); null clears it",
            },
          },
        },
        response: productResponse(200),
      },
    },
    async (request) =>
      updateProductAudited(db, actorOf(request), request.params.slug, request.body),
  );

  app.delete<{ Params: { slug: string } }>(
    "/api/admin/products/:slug",
    { onRequest: write, schema: { params: slugParam } },
    async (request) => {
      await deleteProductAudited(db, actorOf(request), request.params.slug);
      return { deleted: true, slug: request.params.slug };
    },
  );
}
