import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import { withAudit } from "../../../domain/audit/audit-log.js";
import {
  createProduct,
  deleteProduct,
  listProducts,
  renameProduct,
  requireProduct,
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
      const product = await withAudit(
        db,
        actorOf(request),
        "product.create",
        (trx) => createProduct(trx, request.body),
        (product) => ({
          target: { type: "product", id: product.slug },
          details: { name: product.name },
        }),
      );
      return reply.status(201).send(product);
    },
  );

  app.get<{ Params: { slug: string } }>(
    "/api/admin/products/:slug",
    { onRequest: read, schema: { params: slugParam } },
    async (request) => requireProduct(db, request.params.slug),
  );

  app.patch<{ Params: { slug: string }; Body: { name: string } }>(
    "/api/admin/products/:slug",
    {
      onRequest: write,
      schema: {
        params: slugParam,
        body: {
          type: "object",
          required: ["name"],
          additionalProperties: false,
          properties: { name: { type: "string", minLength: 1, maxLength: 255 } },
        },
      },
    },
    async (request) => {
      const product = await withAudit(
        db,
        actorOf(request),
        "product.rename",
        (trx) => renameProduct(trx, request.params.slug, request.body.name),
        (product) => ({
          target: { type: "product", id: product.slug },
          details: { name: product.name },
        }),
      );
      return product;
    },
  );

  app.delete<{ Params: { slug: string } }>(
    "/api/admin/products/:slug",
    { onRequest: write, schema: { params: slugParam } },
    async (request) => {
      await withAudit(
        db,
        actorOf(request),
        "product.delete",
        (trx) => deleteProduct(trx, request.params.slug),
        () => ({
          target: {
            type: "product",
            id: request.params.slug,
          },
        }),
      );
      return { deleted: true, slug: request.params.slug };
    },
  );
}
