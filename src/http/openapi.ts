import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance, FastifySchema } from "fastify";
import { writeMethods } from "./idempotency.js";

const failureSchema = {
  type: "object",
  required: ["error", "code"],
  properties: {
    error: { type: "string", description: "Human-readable message" },
    code: { type: "string", description: "Stable code; see docs/decisions.md" },
  },
} as const;

/** Documentation only: http/idempotency.ts reads and checks the header. */
const idempotencyKeyHeader = {
  type: "object",
  properties: {
    "idempotency-key": {
      type: "string",
      minLength: 1,
      maxLength: 255,
      description:
        "Optional. The same key with the same request replays the first success for 24 h " +
        "(docs/decisions.md)",
    },
  },
} as const;

/** Documentation only: http/response-signing.ts reads the nonce and writes the signature. */
const nonceRequestHeader = {
  type: "object",
  properties: {
    "shipkey-nonce": {
      type: "string",
      description:
        "Optional. Echoed into the signature's last line, so a client that sends a fresh nonce can reject a replayed answer",
    },
  },
} as const;

const signatureResponseHeaders = {
  "Shipkey-Signature": {
    description:
      'keyid="<kid>", algorithm="ed25519", signature="<base64>": Ed25519 with the product\'s key ' +
      "(GET /api/products/{productSlug}/keys) over four lines joined with \\n: " +
      '"(request-target): post <path without query>", "date: <Date header>", ' +
      '"digest: sha-256=<base64 SHA-256 of the body bytes>", "nonce: <Shipkey-Nonce or empty>". ' +
      "Present on every answer whose product is known (docs/client.md).",
    schema: { type: "string" },
  },
  Date: { description: "The date the signature covers", schema: { type: "string" } },
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
          "Release publishing and license activation. Failure bodies: {error, code} plus success/valid " +
          "on the license endpoints; see docs/decisions.md for every code.",
      },
      components: {
        securitySchemes: {
          apiKey: {
            type: "http",
            scheme: "bearer",
            description: "An API key (shk_…) with the route's scope",
          },
        },
      },
    },
    // Admin routes say their scope in the description; all of them and publish need a key.
    transform: ({ schema, url, route }) => {
      const transformed = { ...(schema as FastifySchema & Record<string, unknown>) };
      if (url.startsWith("/api/admin") || url === "/api/releases/publish") {
        transformed.security = [{ apiKey: [] }];
      }
      // Admin failures share the public failure shape; document it on every admin route.
      if (url.startsWith("/api/admin") && transformed.response === undefined) {
        transformed.response = { "4xx": failureSchema, "5xx": failureSchema };
      }
      const methods = [route.method].flat();
      if (url.startsWith("/api/admin") && methods.some((m) => writeMethods.has(m))) {
        transformed.headers = idempotencyKeyHeader;
      }
      if (url.startsWith("/api/license/")) {
        transformed.headers = nonceRequestHeader;
        transformed.response = withSignatureHeaders(transformed.response);
      }
      if (url.startsWith("/documentation") || url.startsWith("/docs")) transformed.hide = true;
      return { schema: transformed, url };
    },
  });
  await app.register(swaggerUi, { routePrefix: "/docs", staticCSP: docsContentSecurityPolicy });
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
}
