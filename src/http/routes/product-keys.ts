import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import type { SigningKeyRing } from "../../domain/signing/key-ring.js";
import { productJwks } from "../../domain/signing/signing-keys.js";
import { documentationOnly, failure } from "./public-schemas.js";
import { type ProductParams, productSlugParam } from "./updates/feed-request.js";

export const jwkSchema = {
  type: "object",
  required: ["kty", "crv", "x", "kid", "alg", "use"],
  properties: {
    kty: { type: "string", const: "OKP" },
    crv: { type: "string", const: "Ed25519" },
    x: { type: "string", description: "The raw 32-byte public key, base64url" },
    kid: { type: "string", description: "The key's JWK thumbprint (RFC 7638)" },
    alg: { type: "string", const: "EdDSA" },
    use: { type: "string", const: "sig" },
  },
} as const;

/** The product's public signing keys as a JWKS: the current key first, then retired ones. */
export function productKeysRoute(app: FastifyInstance, db: Kysely<DB>, ring: SigningKeyRing): void {
  app.get<{ Params: ProductParams }>(
    "/api/products/:productSlug/keys",
    { schema: productKeysSchema, validatorCompiler: documentationOnly },
    async (request) => {
      // Through the ring: a product created without a key gets its first one here.
      await ring.keyFor(request.params.productSlug);
      return productJwks(db, request.params.productSlug);
    },
  );
}

const productKeysSchema = {
  summary: "The product's public signing keys (JWKS): current first, then retired",
  description:
    "Public. Verifies the Shipkey-Signature header of license answers and license certificates. Revalidated on every use (Cache-Control: no-cache).",
  params: { type: "object", required: ["productSlug"], properties: { ...productSlugParam } },
  response: {
    200: {
      type: "object",
      required: ["keys"],
      properties: { keys: { type: "array", items: jwkSchema } },
    },
    "4xx": failure(),
    "5xx": failure(),
  },
};
