import type { AuditEntry } from "../../../domain/audit/audit-log.js";
import type { Page } from "../../../domain/pagination.js";
import { type Html, html, layout, type PageContext, when } from "../html.js";

/** The log's filters as the query gives them; dates are days (UTC), both ends included. */
export interface AuditQuery {
  actor: string;
  action: string;
  target: string;
  from: string;
  to: string;
  cursor: string;
}

/** What the audit page shows: the filters, one page of entries, or why the filters are refused. */
export interface AuditPage {
  context: PageContext;
  query: AuditQuery;
  page: Page<AuditEntry>;
  error: string;
}

export function auditView({ context, query, page, error }: AuditPage): Html {
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
