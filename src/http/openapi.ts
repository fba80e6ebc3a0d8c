import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance, FastifySchema } from "fastify";
import type { Tag } from "../contracts/kit.js";
import { limits } from "../contracts/vocabulary.js";
import { noncePattern } from "../domain/signing/response-signature.js";
import { writeMethods } from "./idempotency.js";
import { type OperationExamples, operationExamples } from "./openapi-examples.js";

/** The document's tags, in reading order. */
const tags: Tag[] = [
  "Licenses",
  "Signing keys",
  "Releases",
  "Update feeds",
  "Admin: products",
  "Admin: licenses",
  "Admin: releases",
  "Admin: API keys",
  "Admin: audit",
  "Admin: webhooks",
  "Admin: e-mail",
  "Admin: integrations",
  "Health",
];

/** Documentation only: http/idempotency.ts reads and checks the header. */
const idempotencyKeyHeader = {
  type: "object",
  properties: {
    "idempotency-key": {
      type: "string",
      minLength: 1,
      maxLength: limits.idempotencyKey,
      description:
        "Optional. The same key with the same request replays the first success for 24 h " +
        "(docs/reference/errors.md)",
    },
  },
} as const;

/** Documentation only: http/response-signing.ts reads the nonce and writes the signature. */
const nonceRequestHeader = {
  type: "object",
  properties: {
    "shipkey-nonce": {
      type: "string",
      pattern: noncePattern.source,
      description:
        "Optional. Asks for a signed answer bound to this request (docs/client.md); send a fresh random one with every request. Malformed: 400 INVALID_NONCE",
    },
  },
} as const;

const signatureResponseHeaders = {
  "Shipkey-Signature": {
    description:
      'keyid="<kid>", algorithm="ed25519", version="2", signature="<base64>": Ed25519 with the ' +
      "product's key (GET /api/products/{productSlug}/keys) over seven lines joined with \\n: " +
      '"shipkey-signature: v2", "(request-target): post <path without query>", ' +
      '"status: <status code>", "date: <Date header>", "nonce: <Shipkey-Nonce>", ' +
      '"request-digest: sha-256=<base64 SHA-256 of the request body bytes>", ' +
      '"digest: sha-256=<base64 SHA-256 of the answer body bytes>". Present when the request ' +
      "carried a Shipkey-Nonce and its productSlug names a product (docs/client.md).",
    type: "string",
  },
  "Shipkey-Key-Endorsements": {
    description:
      "On signed answers while the product announces keys: compact JWSs (typ " +
      'shipkey-key-endorsement+jwt), separated by ", ", each by a key a client already trusts, naming a newer key',
    type: "string",
  },
  Date: { description: "The date the signature covers", type: "string" },
} as const;

/** Every response of a license endpoint documents the signature headers. */
function withSignatureHeaders(response: unknown): unknown {
  if (typeof response !== "object" || response === null) return response;
  return Object.fromEntries(
    Object.entries(response).map(([status, schema]) => [
      status,
      { ...(schema as object), headers: signatureResponseHeaders },
    ]),
  );
}

/**
 * The operation's examples on its request body and answers (@fastify/swagger moves `x-examples`
 * from a schema to its media type). Copies: the route's own schemas stay as they are.
 */
function withExamples(
  schema: FastifySchema & Record<string, unknown>,
  examples: OperationExamples,
): void {
  if (examples.request && typeof schema.body === "object" && schema.body !== null) {
    schema.body = { ...schema.body, "x-examples": examples.request };
  }
  const response = schema.response;
  if (typeof response !== "object" || response === null) return;
  schema.response = Object.fromEntries(
    Object.entries(response).map(([status, answer]) => {
      const named = examples.answers[status];
      return [status, named ? { ...(answer as object), "x-examples": named } : answer];
    }),
  );
}

/** The product's name in /docs' header, where Swagger UI puts its own logo. */
const logo = {
  type: "image/svg+xml",
  content:
    '<svg xmlns="http://www.w3.org/2000/svg" width="180" height="40" viewBox="0 0 180 40">' +
    '<text x="0" y="29" font-family="system-ui, sans-serif" font-size="24" font-weight="700" ' +
    'fill="#ffffff">Shipkey API</text></svg>',
};

/**
 * Swagger UI loads only its own files and /openapi.json, and no page may frame it. It sets
 * styles from its scripts, hence 'unsafe-inline' for styles only.
 */
const docsContentSecurityPolicy =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
  "img-src 'self' data:; connect-src 'self'; font-src 'self' data:; frame-ancestors 'none'; " +
  "base-uri 'none'; object-src 'none'; form-action 'none'";

/**
 * GET /openapi.json (OpenAPI 3.1) from the route schemas, and /docs rendering it with the
 * self-hosted Swagger UI (its assets come from the npm package, never a CDN).
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Shipkey",
        version: "1",
        description:
          "Shipkey, self-hosted release publishing and license activation for desktop software: " +
          "CI publishes release entries (`POST /api/releases/publish`, an API key with " +
          "releases:write), apps activate, validate and deactivate machines against license keys " +
          "(`/api/license/*`, no key) and read the update feeds; the admin API (`/api/admin`) " +
          "manages products, licenses, releases, API keys and webhooks. Failure bodies are " +
          "`{error, code}`, plus `success: false` (`valid: false` on validate) on the license " +
          "endpoints; docs/reference/errors.md lists every code, docs/api.md the public contract.",
      },
      tags: tags.map((name) => ({ name })),
      components: {
        securitySchemes: {
          apiKey: {
            type: "http",
            scheme: "bearer",
            description:
              "An API key (shk_…) with the scope each operation names, or, on the admin API, a " +
              "signed-in admin's session cookie (writes also send X-CSRF-Token). " +
              "A key limited to products is refused " +
              "(403 PRODUCT_NOT_IN_KEY, naming the product) on any route naming another product, " +
              "and its lists hold only its products.",
          },
        },
      },
    },
    // Each route's schema comes from its contract (contract-route.ts): operationId, tag,
    // summary, answers and security. Headers read by hooks rather than schemas are added here.
    transform: ({ schema, url, route }) => {
      const transformed = { ...(schema as FastifySchema & Record<string, unknown>) };
      const methods = [route.method].flat();
      if (url.startsWith("/api/admin") && methods.some((m) => writeMethods.has(m))) {
        transformed.headers = idempotencyKeyHeader;
      }
      if (url.startsWith("/api/license/")) {
        transformed.headers = nonceRequestHeader;
        transformed.response = withSignatureHeaders(transformed.response);
      }
      const examples = operationExamples[url];
      if (examples) withExamples(transformed, examples);
      // The dashboard's pages and assets, and the viewer, are not API.
      if (/^\/(admin|docs|documentation)(\/|$)/.test(url)) transformed.hide = true;
      return { schema: transformed, url };
    },
  });
  await app.register(swaggerUi, {
    routePrefix: "/docs",
    staticCSP: docsContentSecurityPolicy,
    theme: { title: "Shipkey API" },
    logo,
  });
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
}
