import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import {
  createProductAudited,
  deleteProductAudited,
  renameProductAudited,
  setUpdateDeliveryAudited,
} from "../../../domain/audit/audited-actions.js";
import {
  listProducts,
  requireProduct,
  type UpdateDelivery,
} from "../../../domain/products/products.js";
import { actorOf, requireScope } from "../../admin-auth.js";
import { slugParam } from "./schemas.js";

export function adminProductRoutes(app: FastifyInstance, db: Kysely<DB>): void {
  const read = requireScope(db, "products:read");
  const write = requireScope(db, "products:write");

  app.get("/api/admin/products", { onRequest: read }, async () => ({
    items: await listProducts(db),
  }));

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
      },
    },
    async (request, reply) => {
      const product = await createProductAudited(db, actorOf(request), request.body);
      return reply.status(201).send(product);
    },
  );

  app.get<{ Params: { slug: string } }>(
    "/api/admin/products/:slug",
    { onRequest: read, schema: { params: slugParam } },
    async (request) => requireProduct(db, request.params.slug),
  );

  app.patch<{ Params: { slug: string }; Body: { name?: string } & UpdateDelivery }>(
    "/api/admin/products/:slug",
    {
      onRequest: write,
      schema: {
        params: slugParam,
        body: {
          type: "object",
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
          },
        },
      },
    },
    async (request) => {
      const { name, ...delivery } = request.body;
      const { slug } = request.params;
      const actor = actorOf(request);
      let product = await (name === undefined
        ? requireProduct(db, slug)
        : renameProductAudited(db, actor, slug, name));
      if (Object.keys(delivery).length > 0) {
        product = await setUpdateDeliveryAudited(db, actor, slug, delivery);
      }
      return product;
    },
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
