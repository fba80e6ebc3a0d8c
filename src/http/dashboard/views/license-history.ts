import type { LicenseHistoryEntry } from "../../../domain/audit/license-history.js";
import type { Page } from "../../../domain/pagination.js";
import type { License } from "../../../contracts/licenses.js";
import { type Html, html, layout, type PageContext, when } from "../html.js";
import { licenseTabs } from "./license.js";

/** What the History tab shows: the license, one page of its story, or why the cursor is refused. */
export interface HistoryPage {
  context: PageContext;
  license: License;
  cursor: string;
  page: Page<LicenseHistoryEntry>;
  error: string;
}

export function historyView({ context, license, cursor, page, error }: HistoryPage): Html {
  const base = `/admin/licenses/${encodeURIComponent(license.licenseKey)}/history`;
  const next = new URLSearchParams({ cursor: page.nextCursor ?? "" });
  const content = html`${licenseTabs(license.licenseKey, "history")}
    ${error ? html`<p class="alert" role="alert">${error}</p>` : ""}
    ${
      page.items.length === 0
        ? html`<div class="empty">
            Nothing recorded for this license${cursor ? " after this point" : ""}.
          </div>`
        : historyTable(page.items)
    }
    <nav class="pager" aria-label="Pages">
      ${cursor ? html`<a href="${base}" rel="first">« Newest</a>` : ""}
      ${page.nextCursor ? html`<a href="${base}?${next.toString()}" rel="next">Older entries ›</a>` : ""}
    </nav>`;
  return layout(`License ${license.licenseKey}`, "licenses", context, content);
}

function historyTable(entries: LicenseHistoryEntry[]): Html {
  return html`<div class="table-wrap">
    <table class="history">
      <thead>
        <tr>
          <th>When</th>
          <th>Who</th>
          <th>What</th>
          <th>Change</th>
        </tr>
      </thead>
      <tbody>
        ${entries.map(
          (e) =>
            html`<tr data-action="${e.action}">
              <td>${when(e.at)}</td>
              <td>${e.actor.label} <span class="muted">(${actorKinds[e.actor.type]})</span></td>
              <td>${summaryOf(e)}</td>
              <td>${diffOf(e.details)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

const actorKinds: Record<LicenseHistoryEntry["actor"]["type"], string> = {
  admin: "admin",
  api_key: "API key",
  cli: "CLI",
  service: "server",
  app: "public API",
};

const summaries: Record<string, string> = {
  "license.create": "License created",
  "license.update": "Settings changed",
  "license.suspend": "Suspended",
  "license.revoke": "Revoked",
  "license.reinstate": "Reinstated",
  "license.move": "Moved to another product",
  "license.reset_machines": "Every machine deactivated",
  "license.end_offline_place": "Offline place ended",
  "machine.activate": "Machine activated",
  "machine.deactivate": "Machine deactivated",
  "machine.lease_expired": "Machine's lease expired",
};

/** What happened, in words, with the machine it concerns. */
function summaryOf(e: LicenseHistoryEntry): Html {
  const { machineId, machineName, platform, machineIds, reason } = e.details;
  const known = summaries[e.action];
  const machine =
    typeof machineId === "string"
      ? html` <span class="mono">${machineId}</span>${[machineName, platform]
            .filter((part) => typeof part === "string")
            .map((part) => html` <span class="muted">${String(part)}</span>`)}`
      : "";
  const machines = Array.isArray(machineIds)
    ? html` <span class="muted"
        >(${machineIds.length === 0 ? "none active" : machineIds.join(", ")})</span
      >`
    : "";
  return html`${known ?? html`<span class="mono">${e.action}</span>`}${machine}${machines}${
    typeof reason === "string" ? html` <span class="muted">(${reason})</span>` : ""
  }`;
}

/** Names of the settings as the license page's form labels them. */
const settingLabels: Record<string, string> = {
  status: "Status",
  expiresAt: "Expires",
  edition: "Edition",
  editionName: "Edition name",
  features: "Features",
  maxMachines: "Machine slots",
  customerName: "Customer name",
  customerEmail: "Customer email",
  note: "Note",
  externalId: "External id",
  maxDeactivationsPer30Days: "Deactivations by the app in 30 days",
  product: "Product",
};

/**
 * Each changed setting as "Machine slots 1 → 3". An entry recorded before old values were kept
 * names only the settings (`changed`); a creation its first settings.
 */
function diffOf(details: Record<string, unknown>): Html | string {
  const { changes, changed } = details;
  if (isChanges(changes)) {
    if (Object.keys(changes).length === 0) return html`<span class="muted">nothing changed</span>`;
    return html`<ul class="diff">
      ${Object.entries(changes).map(
        ([name, { from, to }]) =>
          html`<li data-setting="${name}">
            ${settingLabels[name] ?? name}: <del>${shown(name, from)}</del> →
            <ins>${shown(name, to)}</ins>
          </li>`,
      )}
    </ul>`;
  }
  if (Array.isArray(changed)) {
    return changed.length === 0
      ? html`<span class="muted">nothing changed</span>`
      : `Changed: ${changed.map((name) => settingLabels[String(name)] ?? String(name)).join(", ")}`;
  }
  const { product, maxMachines, status } = details;
  if (typeof product === "string" && typeof maxMachines === "number") {
    return `${product}, ${maxMachines} machine ${maxMachines === 1 ? "slot" : "slots"}, ${String(status)}`;
  }
  return "";
}

function isChanges(value: unknown): value is Record<string, { from: unknown; to: unknown }> {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every(
      (v) => typeof v === "object" && v !== null && "from" in v && "to" in v,
    )
  );
}

/** A setting's value as text: none, a list, a time. */
function shown(name: string, value: unknown): Html | string {
  if (value === null || value === undefined || value === "") {
    return name === "expiresAt" ? "never" : "none";
  }
  if (Array.isArray(value)) return value.length === 0 ? "none" : value.map(String).join(", ");
  if (name === "expiresAt" && typeof value === "string") return when(value);
  return typeof value === "string" ? value : JSON.stringify(value);
}
