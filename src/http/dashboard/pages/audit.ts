import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import { type AuditEntry, type AuditFilter, listAudit } from "../../../domain/audit/audit-log.js";
import type { Page } from "../../../domain/pagination.js";
import { ShipkeyError } from "../../../errors.js";
import { type Html, html, layout, type PageContext, when } from "../html.js";
import { contextOf, type Form, sendPage, text } from "../page-kit.js";

/** The log's filters as the query gives them; dates are days (UTC), both ends included. */
interface AuditQuery {
  actor: string;
  action: string;
  target: string;
  from: string;
  to: string;
  cursor: string;
}

/** What the audit page shows: the filters, one page of entries, or why the filters are refused. */
interface AuditPage {
  context: PageContext;
  query: AuditQuery;
  page: Page<AuditEntry>;
  error: string;
}

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

function auditView({ context, query, page, error }: AuditPage): Html {
  const filtered = query.actor || query.action || query.target || query.from || query.to;
  const next = new URLSearchParams({ ...query, cursor: page.nextCursor ?? "" });
  const content = html`${auditFilters(query)}
  ${error ? html`<p class="alert" role="alert">${error}</p>` : ""}
  ${
    page.items.length === 0
      ? html`<div class="empty">
          ${
            filtered
              ? "No entries match these filters."
              : "Nothing recorded yet. Every change made here or through the admin API appears in this log."
          }
        </div>`
      : html`${auditTable(page.items)}
        ${page.nextCursor ? html`<p><a href="/admin/audit?${next.toString()}" rel="next">Older entries →</a></p>` : ""}`
  }`;
  return layout("Audit log", "audit", context, content);
}

function auditFilters(query: AuditQuery): Html {
  const field = (name: keyof AuditQuery, label: string, type: string, hint = "") =>
    html`<label
      >${label} <input type="${type}" name="${name}" value="${query[name]}" placeholder="${hint}"
    /></label>`;
  return html`<form method="get" class="toolbar" role="search">
    ${field("actor", "Who", "search", "Email or API key name")}
    ${field("action", "Action", "search", "license or license.update")}
    ${field("target", "Target", "search", "License key or id")} ${field("from", "From", "date")}
    ${field("to", "To", "date")}
    <button type="submit" class="secondary">Filter</button>
    <a href="/admin/audit">Clear</a>
  </form>`;
}

function auditTable(entries: AuditEntry[]): Html {
  return html`<div class="table-wrap">
    <table class="audit">
      <thead>
        <tr>
          <th>When</th>
          <th>Who</th>
          <th>Action</th>
          <th>Target</th>
          <th>From</th>
          <th>Details</th>
        </tr>
      </thead>
      <tbody>
        ${entries.map(auditRow)}
      </tbody>
    </table>
  </div>`;
}

function auditRow(e: AuditEntry): Html {
  return html`<tr>
    <td>${when(e.at)}</td>
    <td>
      ${e.actor.label}
      <span class="muted">(${e.actor.type === "api_key" ? "API key" : e.actor.type})</span>
    </td>
    <td class="mono">${e.action}</td>
    <td class="mono target">
      ${
        e.target.type === "license"
          ? html`<a href="/admin/licenses/by-id/${e.target.id}"
              >license ${String(e.details.licenseKey ?? e.target.id)}</a
            >`
          : e.target.id
      }
    </td>
    <td class="mono">${e.ip ?? ""}</td>
    <td class="mono details">${Object.keys(e.details).length ? JSON.stringify(e.details) : ""}</td>
  </tr>`;
}
