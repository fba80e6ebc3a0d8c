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

/** A JWKS member as published: the JWK, its status and its endorsement (docs/client.md). */
const publishedJwkSchema = {
  ...jwkSchema,
  required: [...jwkSchema.required, "status"],
  properties: {
    ...jwkSchema.properties,
    status: {
      type: "string",
      enum: ["current", "next", "retired"],
      description:
        "current signs; next is published ahead of its promotion; retired no longer signs",
    },
    endorsement: {
      type: "string",
      description:
        "Compact JWS (typ shipkey-key-endorsement+jwt) by the key that was current when this one was prepared, naming this key",
    },
  },
} as const;

/** The product's public signing keys as a JWKS: current, then next, then retired ones. */
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
  summary: "The product's public signing keys (JWKS): current, then next, then retired",
  description:
    "Public. Verifies the Shipkey-Signature header of license answers and license certificates. Revalidated on every use (Cache-Control: no-cache).",
  params: { type: "object", required: ["productSlug"], properties: { ...productSlugParam } },
  response: {
    200: {
      type: "object",
      required: ["keys"],
      properties: { keys: { type: "array", items: publishedJwkSchema } },
    },
    "4xx": failure(),
    "5xx": failure(),
  },
};
