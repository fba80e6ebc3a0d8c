import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import { listAudit } from "../../../domain/audit/audit-log.js";
import { pageLimits } from "../../../domain/pagination.js";
import { productIdsOf, requireScope } from "../../admin-auth.js";
import { pageQuery } from "./schemas.js";

export function adminAuditRoutes(app: FastifyInstance, db: Kysely<DB>): void {
  app.get<{ Querystring: { limit?: string; cursor?: string } }>(
    "/api/admin/audit",
    {
      onRequest: requireScope(db, "audit:read"),
      schema: {
        querystring: { type: "object", additionalProperties: false, properties: pageQuery },
      },
    },
    async (request) => {
      const { limit, cursor } = request.query;
      return listAudit(db, {
        limit: Math.min(limit === undefined ? pageLimits.default : Number(limit), pageLimits.max),
        cursor,
        productIds: productIdsOf(request),
      });
    },
  );
}
