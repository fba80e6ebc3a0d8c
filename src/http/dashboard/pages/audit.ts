import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import { listAudit } from "../../../domain/audit/audit-log.js";
import { html, layout, when } from "../html.js";
import { contextOf, type Form, sendPage, text } from "../page-kit.js";

export function auditPages(app: FastifyInstance, db: Kysely<DB>): void {
  app.get<{ Querystring: Form }>("/admin/audit", async (request, reply) => {
    const cursor = text(request.query, "cursor");
    const page = await listAudit(db, { limit: 100, cursor: cursor || undefined });
    return sendPage(
      reply,
      layout(
        "Audit log",
        "audit",
        contextOf(request),
        page.items.length === 0
          ? html`<div class="empty">
              Nothing recorded yet. Every change made here or through the admin API appears in this
              log.
            </div>`
          : html`<div class="table-wrap">
                <table>
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
                    ${page.items.map(
                      (e) =>
                        html`<tr>
                          <td>${when(e.at)}</td>
                          <td>
                            ${e.actor.label}
                            <span class="muted"
                              >(${e.actor.type === "api_key" ? "API key" : e.actor.type})</span
                            >
                          </td>
                          <td class="mono">${e.action}</td>
                          <td class="mono">
                            ${
                              e.target.type === "license"
                                ? html`<a href="/admin/licenses/by-id/${e.target.id}"
                                    >license ${String(e.details.licenseKey ?? e.target.id)}</a
                                  >`
                                : e.target.id
                            }
                          </td>
                          <td class="mono">${e.ip ?? ""}</td>
                          <td class="mono">
                            ${Object.keys(e.details).length ? JSON.stringify(e.details) : ""}
                          </td>
                        </tr>`,
                    )}
                  </tbody>
                </table>
              </div>
              ${page.nextCursor ? html`<p><a href="/admin/audit?cursor=${page.nextCursor}">Older entries →</a></p>` : ""}`,
      ),
    );
  });
}
