import type {
  FastifyInstance,
  FastifyRequest,
  onRequestAsyncHookHandler,
  preHandlerAsyncHookHandler,
} from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import { authenticateApiKey } from "../domain/api-keys/authenticate.js";
import { assertProductInKey, type ProductTarget } from "../domain/api-keys/key-authority.js";
import type { Actor } from "../domain/audit/audit-log.js";
import { ShipkeyError } from "../errors.js";
import { csrfMatches, loadSession } from "./session.js";
import { singleHeader } from "./request-fields.js";
import { type ApiKeyScope } from "../contracts/vocabulary.js";

declare module "fastify" {
  interface FastifyRequest {
    /** Set by requireScope on admin routes: who is acting, for the audit log. */
    actor: Actor | null;
  }
}

export function registerActor(app: FastifyInstance): void {
  app.decorateRequest("actor", null);
}

/**
 * onRequest hook for an admin route: a Bearer API key holding `scope` (401 missing/unknown/
 * revoked/expired, 403 wrong scope), resolved before the body is read.
 */
export function requireScope(db: Kysely<DB>, scope: ApiKeyScope): onRequestAsyncHookHandler {
  return async (request) => {
    const authorization = singleHeader(request.raw, "authorization");
    // A signed-in admin (dashboard session) may use the admin API with every scope; a request
    // that changes something must echo the session's CSRF token in X-CSRF-Token.
    if (authorization === undefined && request.raw.rawHeaders.length > 0) {
      const session = await loadSession(db, request);
      if (session) {
        if (
          request.method !== "GET" &&
          request.method !== "HEAD" &&
          !csrfMatches(session, request.headers["x-csrf-token"])
        ) {
          throw new ShipkeyError("CSRF_TOKEN_INVALID", "X-CSRF-Token header missing or wrong");
        }
        request.actor = {
          type: "admin",
          id: session.admin.id,
          label: session.admin.email,
          ip: request.ip,
        };
        return;
      }
    }
    const key = await authenticateApiKey(db, authorization, scope);
    request.actor = {
      type: "api_key",
      id: key.apiKeyId,
      label: key.name,
      ip: request.ip,
      productIds: key.productIds,
    };
  };
}

/**
 * preHandler for an admin route that names a product (path, body, or a license's key): a key
 * limited to products is refused, 403 PRODUCT_NOT_IN_KEY naming the product, for any other one.
 * It runs after validation, so a body's productSlug is at hand.
 */
export function requireProductInKey<R extends FastifyRequest>(
  db: Kysely<DB>,
  targetOf: (request: R) => ProductTarget,
): preHandlerAsyncHookHandler {
  return async (request) => {
    const productIds = request.actor?.productIds;
    if (productIds === undefined || productIds === null) return;
    await assertProductInKey(db, productIds, targetOf(request as R));
  };
}

/** The product ids the acting key is limited to; null for every product (admins, CLI). */
export function productIdsOf(request: FastifyRequest): readonly string[] | null {
  return request.actor?.productIds ?? null;
}

/**
 * A preValidation hook for routes that reach every product's data (webhook endpoints, payment
 * integrations): a key limited to products is refused before its body is read, learning nothing
 * of these routes' bodies either.
 */
export function refuseLimitedKeys(what: string) {
  return async (request: FastifyRequest): Promise<void> => {
    if (productIdsOf(request) !== null) {
      throw new ShipkeyError(
        "PRODUCT_NOT_IN_KEY",
        `This API key is limited to its products and cannot manage ${what}`,
      );
    }
  };
}

/** Who acts on an admin route: request.actor, which requireScope set. */
export function requireActor(request: FastifyRequest): Actor {
  if (!request.actor) throw new Error("admin route without requireScope");
  return request.actor;
}
