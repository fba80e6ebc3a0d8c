import type { Kysely } from "kysely";
import { listAudit as listAuditContract } from "../../../contracts/admin.js";
import { pageLimits } from "../../../contracts/vocabulary.js";
import type { DB } from "../../../db/schema.js";
import { listAudit } from "../../../domain/audit/audit-log.js";
import { productIdsOf } from "../../admin-auth.js";
import { adminRoute, type App } from "../../contract-route.js";

export function adminAuditRoutes(app: App, db: Kysely<DB>): void {
  app.get(listAuditContract.url, adminRoute(db, listAuditContract), async (request) => {
    const { limit, cursor } = request.query;
    return listAudit(db, {
      limit: Math.min(limit === undefined ? pageLimits.default : Number(limit), pageLimits.max),
      cursor,
      productIds: productIdsOf(request),
    });
  });
}
