import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import { type AuditEntry, type AuditFilter, listAudit } from "../../../domain/audit/audit-log.js";
import type { Page } from "../../../domain/pagination.js";
import { ShipkeyError } from "../../../errors.js";
import { type Form, text } from "../form-body.js";
import { contextOf, sendPage } from "../page-kit.js";
import { type AuditQuery, auditView } from "../views/audit.js";

const day = 86_400_000;

export function auditPages(app: FastifyInstance, db: Kysely<DB>): void {
  app.get<{ Querystring: Form }>("/admin/audit", async (request, reply) => {
    const query = auditQuery(request.query);
    let page: Page<AuditEntry> = { items: [], nextCursor: null };
    let error = "";
    try {
      page = await listAudit(db, {
        ...auditFilter(query),
        limit: 100,
        cursor: query.cursor || undefined,
      });
    } catch (err) {
      if (!(err instanceof ShipkeyError)) throw err;
      error = err.message;
    }
    return sendPage(reply, auditView({ context: contextOf(request), query, page, error }));
  });
}

function auditQuery(form: Form): AuditQuery {
  return {
    actor: text(form, "actor"),
    action: text(form, "action"),
    target: text(form, "target"),
    from: text(form, "from"),
    to: text(form, "to"),
    cursor: text(form, "cursor"),
  };
}

/** A YYYY-MM-DD day as the epoch ms of its start (UTC); "" is no bound. */
function dayStart(field: string, value: string): number | undefined {
  if (value === "") return undefined;
  const ms = /^\d{4}-\d{2}-\d{2}$/.test(value) ? Date.parse(`${value}T00:00:00Z`) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${field} must be a date`, { field });
  }
  return ms;
}

function auditFilter(query: AuditQuery): AuditFilter {
  const to = dayStart("to", query.to);
  return {
    actor: query.actor || undefined,
    action: query.action || undefined,
    target: query.target || undefined,
    from: dayStart("from", query.from),
    to: to === undefined ? undefined : to + day,
  };
}
