import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import {
  createProductAudited,
  deleteProductAudited,
  removeSigningKeyAudited,
  prepareSigningKeyAudited,
  promoteSigningKeyAudited,
  updateProductAudited,
} from "../../../domain/audit/audited-actions.js";
import {
  deactivationLimitRange,
  listProducts,
  offlineAllowanceRange,
  offlinePeriod,
  requireProduct,
  type UpdateDelivery,
} from "../../../domain/products/products.js";
import { listProductKeys } from "../../../domain/signing/signing-keys.js";
import type { Signing } from "../../../domain/signing/key-ring.js";
import { actorOf, productIdsOf, requireProductInKey, requireScope } from "../../admin-auth.js";
import { failure } from "../public-schemas.js";
import { productSchema, slugParam } from "./schemas.js";

const productResponse = (status: 200 | 201) => ({
  [status]: productSchema,
  "4xx": failure(),
  "5xx": failure(),
});

export function adminProductRoutes(app: FastifyInstance, db: Kysely<DB>, signing: Signing): void {
  const read = requireScope(db, "products:read");
  const write = requireScope(db, "products:write");
  // A key limited to products reaches only those, and creates none.
  const inKey = requireProductInKey<FastifyRequest<{ Params: { slug: string } }>>(db, (r) => ({
    productSlug: r.params.slug,
  }));

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
    async (request) => ({ items: await listProducts(db, productIdsOf(request)) }),
  );

  app.post<{ Body: { slug: string; name: string } }>(
    "/api/admin/products",
    {
      onRequest: write,
      preHandler: requireProductInKey<FastifyRequest<{ Body: { slug: string } }>>(db, (r) => ({
        newProduct: r.body.slug,
      })),
      schema: {
        description:
          "Creates a product and its signing key. A key limited to products cannot (403 PRODUCT_NOT_IN_KEY).",
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
      const product = await createProductAudited(
        db,
        actorOf(request),
        request.body,
        signing.masterKey,
      );
      return reply.status(201).send(product);
    },
  );

  app.get<{ Params: { slug: string } }>(
    "/api/admin/products/:slug",
    {
      onRequest: read,
      preHandler: inKey,
      schema: { params: slugParam, response: productResponse(200) },
    },
    async (request) => requireProduct(db, request.params.slug),
  );

  app.patch<{
    Params: { slug: string };
    Body: {
      name?: string;
      tauriPublicKey?: string | null;
      offlinePeriodSeconds?: number;
      offlineAllowance?: number;
      maxDeactivationsPer30Days?: number | null;
    } & UpdateDelivery;
  }>(
    "/api/admin/products/:slug",
    {
      onRequest: write,
      preHandler: inKey,
      schema: {
        description:
          "Changes the given settings: name, update delivery, Tauri public key, how long license certificates last (60 s to 90 days), how many machines beyond maxMachines may hold one (the offline allowance), and the churn limit on public deactivations.",
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
            offlinePeriodSeconds: {
              type: "integer",
              minimum: offlinePeriod.minSeconds,
              maximum: offlinePeriod.maxSeconds,
            },
            offlineAllowance: {
              type: "integer",
              minimum: offlineAllowanceRange.min,
              maximum: offlineAllowanceRange.max,
              description:
                "Machines beyond a license's maxMachines that may hold an unexpired certificate at once (default 1); checkout beyond it is 403 OFFLINE_LIMIT_REACHED",
            },
            maxDeactivationsPer30Days: {
              type: ["integer", "null"],
              minimum: deactivationLimitRange.min,
              maximum: deactivationLimitRange.max,
              description:
                "Public deactivations allowed per license in the trailing 30 days (403 DEACTIVATION_LIMIT_REACHED beyond); null: no limit (the default). A license's own value overrides it",
            },
          },
        },
        response: productResponse(200),
      },
    },
    async (request) =>
      updateProductAudited(db, actorOf(request), request.params.slug, request.body),
  );

  app.get<{ Params: { slug: string } }>(
    "/api/admin/products/:slug/keys",
    {
      onRequest: read,
      preHandler: inKey,
      schema: {
        description:
          "The product's signing keys (public halves only): current, next, then retired ones.",
        params: slugParam,
      },
    },
    async (request) => ({ items: await listProductKeys(db, request.params.slug) }),
  );

  app.post<{ Params: { slug: string } }>(
    "/api/admin/products/:slug/keys/prepare",
    {
      onRequest: write,
      preHandler: inKey,
      schema: {
        description:
          "Step one of a key rotation: a next signing key, endorsed by the current one, published in the JWKS and announced on signed answers. It signs nothing until promoted.",
        params: slugParam,
      },
    },
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

  app.post<{ Params: { slug: string }; Body: { force?: boolean } | undefined }>(
    "/api/admin/products/:slug/keys/promote",
    {
      onRequest: write,
      preHandler: inKey,
      schema: {
        description:
          "Step two: the next key becomes current (every server signs with it within 30 s) and the current one is retired, still published. Refused (409 SIGNING_KEY_TOO_NEW) while the next key is younger than the product's offline period, unless force is true.",
        params: slugParam,
        body: {
          type: ["object", "null"],
          additionalProperties: false,
          properties: { force: { type: "boolean" } },
        },
      },
    },
    async (request) => {
      const { slug } = request.params;
      const promotion = await promoteSigningKeyAudited(db, actorOf(request), slug, {
        force: request.body?.force === true,
      });
      const keys = await listProductKeys(db, slug);
      return { ...promotion, keys };
    },
  );

  app.delete<{ Params: { slug: string; kid: string } }>(
    "/api/admin/products/:slug/keys/:kid",
    {
      onRequest: write,
      preHandler: inKey,
      schema: {
        description:
          "Removes a next or retired signing key from the JWKS; the current key cannot be removed.",
        params: {
          type: "object",
          required: ["slug", "kid"],
          properties: {
            slug: { type: "string", minLength: 1, maxLength: 255 },
            kid: { type: "string", minLength: 1, maxLength: 64 },
          },
        },
      },
    },
    async (request) => {
      const { slug, kid } = request.params;
      await removeSigningKeyAudited(db, actorOf(request), slug, kid);
      return { deleted: true, kid };
    },
  );

  app.delete<{ Params: { slug: string } }>(
    "/api/admin/products/:slug",
    { onRequest: write, preHandler: inKey, schema: { params: slugParam } },
    async (request) => {
      await deleteProductAudited(db, actorOf(request), request.params.slug);
      return { deleted: true, slug: request.params.slug };
    },
  );
}
