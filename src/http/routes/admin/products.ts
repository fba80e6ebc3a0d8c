import type { FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import {
  createProductAudited,
  deleteProductAudited,
  removeSigningKeyAudited,
  prepareSigningKeyAudited,
  promoteSigningKeyAudited,
  updateProductAudited,
} from "../../../actions/products.js";
import { listProducts, requireProduct } from "../../../domain/products/products.js";
import { listProductKeys } from "../../../domain/signing/signing-keys.js";
import type { Signing } from "../../../domain/signing/key-ring.js";
import * as contracts from "../../../contracts/products.js";
import { actorOf, productIdsOf, requireProductInKey } from "../../admin-auth.js";
import { adminRoute, type App } from "../../contract-route.js";

export function adminProductRoutes(app: App, db: Kysely<DB>, signing: Signing): void {
  // A key limited to products reaches only those, and creates none.
  const inKey = requireProductInKey<FastifyRequest<{ Params: { slug: string } }>>(db, (r) => ({
    productSlug: r.params.slug,
  }));

  app.get(contracts.listProducts.url, adminRoute(db, contracts.listProducts), async (request) => ({
    items: await listProducts(db, productIdsOf(request)),
  }));

  app.post(
    contracts.createProduct.url,
    {
      ...adminRoute(db, contracts.createProduct),
      preHandler: requireProductInKey<FastifyRequest<{ Body: { slug: string } }>>(db, (r) => ({
        newProduct: r.body.slug,
      })),
    },
    async (request, reply) => {
      const product = await createProductAudited(
        db,
        actorOf(request),
        request.body,
        signing.masterKey,
      );
      return reply.status(201).send(product);
    },
  );

  app.get(
    contracts.getProduct.url,
    { ...adminRoute(db, contracts.getProduct), preHandler: inKey },
    async (request) => requireProduct(db, request.params.slug),
  );

  app.patch(
    contracts.updateProduct.url,
    { ...adminRoute(db, contracts.updateProduct), preHandler: inKey },
    async (request) =>
      updateProductAudited(db, actorOf(request), request.params.slug, request.body),
  );

  app.get(
    contracts.listSigningKeys.url,
    { ...adminRoute(db, contracts.listSigningKeys), preHandler: inKey },
    async (request) => ({ items: await listProductKeys(db, request.params.slug) }),
  );

  app.post(
    contracts.prepareSigningKey.url,
    { ...adminRoute(db, contracts.prepareSigningKey), preHandler: inKey },
    async (request, reply) => {
      const { slug } = request.params;
      const prepared = await prepareSigningKeyAudited(
        db,
        actorOf(request),
        signing.masterKey,
        slug,
      );
      const keys = await listProductKeys(db, slug);
      return reply.status(201).send({ ...prepared, keys });
    },
  );

  app.post(
    contracts.promoteSigningKey.url,
    { ...adminRoute(db, contracts.promoteSigningKey), preHandler: inKey },
    async (request) => {
      const { slug } = request.params;
      const promotion = await promoteSigningKeyAudited(db, actorOf(request), slug, {
        force: request.body?.force === true,
      });
      const keys = await listProductKeys(db, slug);
      return { ...promotion, keys };
    },
  );

  app.delete(
    contracts.removeSigningKey.url,
    { ...adminRoute(db, contracts.removeSigningKey), preHandler: inKey },
    async (request) => {
      const { slug, kid } = request.params;
      await removeSigningKeyAudited(db, actorOf(request), slug, kid);
      return { deleted: true, kid } as const;
    },
  );

  app.delete(
    contracts.deleteProduct.url,
    { ...adminRoute(db, contracts.deleteProduct), preHandler: inKey },
    async (request) => {
      await deleteProductAudited(db, actorOf(request), request.params.slug);
      return { deleted: true, slug: request.params.slug } as const;
    },
  );
}
