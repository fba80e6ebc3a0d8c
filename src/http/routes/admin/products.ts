import type { FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import * as actions from "../../../actions/products.js";
import { listProducts, requireProduct } from "../../../domain/products/products.js";
import { listProductKeys } from "../../../domain/signing/signing-keys.js";
import type { Signing } from "../../../domain/signing/key-ring.js";
import * as contracts from "../../../contracts/products.js";
import { productIdsOf, requireActor, requireProductInKey } from "../../admin-auth.js";
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
      const product = await actions.createProduct(
        db,
        requireActor(request),
        request.body,
        signing.masterKey,
        request.idempotencyClaim,
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
      actions.updateProduct(
        db,
        requireActor(request),
        request.params.slug,
        request.body,
        request.idempotencyClaim,
      ),
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
      const prepared = await actions.prepareSigningKey(
        db,
        requireActor(request),
        signing.masterKey,
        slug,
        request.idempotencyClaim,
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
      const promotion = await actions.promoteSigningKey(
        db,
        requireActor(request),
        slug,
        {
          force: request.body?.force === true,
        },
        request.idempotencyClaim,
      );
      const keys = await listProductKeys(db, slug);
      return { ...promotion, keys };
    },
  );

  app.delete(
    contracts.removeSigningKey.url,
    { ...adminRoute(db, contracts.removeSigningKey), preHandler: inKey },
    async (request) => {
      const { slug, kid } = request.params;
      await actions.removeSigningKey(
        db,
        requireActor(request),
        slug,
        kid,
        request.idempotencyClaim,
      );
      return { deleted: true, kid } as const;
    },
  );

  app.delete(
    contracts.deleteProduct.url,
    { ...adminRoute(db, contracts.deleteProduct), preHandler: inKey },
    async (request) => {
      await actions.deleteProduct(
        db,
        requireActor(request),
        request.params.slug,
        request.idempotencyClaim,
      );
      return { deleted: true, slug: request.params.slug } as const;
    },
  );
}
