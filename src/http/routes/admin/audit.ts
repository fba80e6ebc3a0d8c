import type { Kysely } from "kysely";
import { listAudit as listAuditContract } from "../../../contracts/audit.js";
import { pageLimits } from "../../../contracts/vocabulary.js";
import type { DB } from "../../../db/schema.js";
import { listAudit } from "../../../domain/audit/audit-log.js";
import { ShipkeyError } from "../../../errors.js";
import { parseIsoTimestamp } from "../../../lib/time.js";
import { productIdsOf } from "../../admin-auth.js";
import { adminRoute, type App } from "../../contract-route.js";

export function adminAuditRoutes(app: App, db: Kysely<DB>): void {
  app.get(listAuditContract.url, adminRoute(db, listAuditContract), async (request) => {
    const { limit, cursor, actor, action, target, from, to } = request.query;
    return listAudit(db, {
      limit: Math.min(limit === undefined ? pageLimits.default : Number(limit), pageLimits.max),
      cursor,
      actor,
      action,
      target,
      from: instant("from", from),
      to: instant("to", to),
      productIds: productIdsOf(request),
    });
  });
}

function instant(field: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = parseIsoTimestamp(value);
  if (ms === null) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${field} must be an ISO 8601 timestamp`, {
      field,
    });
  }
  return ms;
}
