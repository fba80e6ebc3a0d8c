import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import type { ApiKeyScope } from "../domain/api-keys/api-keys.js";
import { authenticateApiKey } from "../domain/api-keys/authenticate.js";
import type { Actor } from "../domain/audit/audit-log.js";
import { singleHeader } from "./request-fields.js";

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
    const key = await authenticateApiKey(db, singleHeader(request.raw, "authorization"), scope);
    request.actor = { type: "api_key", id: key.apiKeyId, label: key.name, ip: request.ip };
  };
}

export function actorOf(request: FastifyRequest): Actor {
  if (!request.actor) throw new Error("admin route without requireScope");
  return request.actor;
}
