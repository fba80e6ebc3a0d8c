import type { UsageReport } from "../../../domain/releases/usage-report.js";
import { type Html, html } from "../html.js";

/** What "unknown" means in a count of machines per version. */
const unknownHint = html`<p class="hint">
  Active machines, by the app version each last reported with activate, validate or checkout (the
  Shipkey SDK's <code>appVersion</code>). “unknown”: machines whose app has not reported a version:
  an app that does not use the Shipkey SDK, or an older SDK.
</p>`;

/**
 * A product's active machines per app version (the overview and the releases page): the `limit`
 * versions with the most machines, then the rest summed up.
 */
export function machinesPerVersion(rows: UsageReport["machinesByVersion"], limit: number): Html {
  if (rows.length === 0) {
    return html`<p class="muted">No active machines.</p>
      ${unknownHint}`;
  }
  const shown = rows.slice(0, limit);
  const rest = rows.slice(limit);
  const restMachines = rest.reduce((sum, row) => sum + row.machines, 0);
  return html`<table class="machines-per-version">
      <thead>
        <tr>
          <th>Version</th>
          <th>Machines</th>
        </tr>
      </thead>
      <tbody>
        ${shown.map(
          (row) =>
            html`<tr>
              <td>${row.version ?? html`<span class="muted">unknown</span>`}</td>
              <td>${row.machines}</td>
            </tr>`,
        )}
        ${
          rest.length === 0
            ? ""
            : html`<tr>
                <td class="muted">${rest.length} other version${rest.length === 1 ? "" : "s"}</td>
                <td>${restMachines}</td>
              </tr>`
        }
      </tbody>
    </table>
    ${unknownHint}`;
}
