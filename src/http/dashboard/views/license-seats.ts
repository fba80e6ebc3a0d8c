import type { Product } from "../../../domain/products/products.js";
import type { LicenseDetail } from "../../../contracts/licenses.js";
import { actionForm, csrfField, type Html, html, when } from "../html.js";

/** "3 days ago" from an ISO time, as of `now`. */
export function ageOf(iso: string, now: number): string {
  const minutes = Math.floor((now - Date.parse(iso)) / 60_000);
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.floor(hours / 24)} days ago`;
}

/** An active machine's last-seen age, lease expiry and certificate expiry, as table cells. */
export function machineSeatCells(m: LicenseDetail["machines"][number], now: number): Html {
  return html`<td class="last-seen">
      ${when(m.lastSeenAt)} <span class="muted">(${ageOf(m.lastSeenAt, now)})</span>
    </td>
    <td class="lease-expires">
      ${m.leaseExpiresAt === null ? html`<span class="muted">no lease</span>` : when(m.leaseExpiresAt)}
    </td>
    <td class="certificate-expires">
      ${
        m.certificateExpiresAt === null
          ? html`<span class="muted">none</span>`
          : when(m.certificateExpiresAt)
      }
    </td>`;
}

/**
 * Deactivated machines still running on a certificate, each with when its place ends and a
 * button that ends it now (a stolen laptop).
 */
export function offlinePlacesPanel(license: LicenseDetail, base: string, csrfToken: string): Html {
  const places = license.offlinePlaces;
  const room = license.maxMachines + license.offlineAllowance;
  return html`<section class="panel stack offline-places">
    <p>
      Machines running: ${String(license.activeMachines + places.length)} of ${String(room)}
      <span class="muted"
        >(${String(license.maxMachines)} slots + an offline allowance of
        ${String(license.offlineAllowance)})</span
      >.
      ${
        places.length === 0
          ? "No deactivated machine holds an unexpired certificate."
          : "Deactivated machines keep running offline on their certificate until it expires:"
      }
    </p>
    ${
      places.length === 0
        ? ""
        : html`<div class="table-scroll">
            <table class="offline-places">
              <thead>
                <tr>
                  <th>Machine</th>
                  <th>Deactivated</th>
                  <th>Place ends</th>
                  <th></th>
                </tr>
              </thead>
              <tbody>
                ${places.map(
                  (p) =>
                    html`<tr>
                      <td>
                        <span class="mono">${p.machineId}</span>
                        ${p.machineName === null ? "" : html`<span class="muted">${p.machineName}</span>`}
                      </td>
                      <td>${p.deactivatedAt === null ? "" : when(p.deactivatedAt)}</td>
                      <td class="place-ends">${when(p.endsAt)}</td>
                      <td>
                        ${actionForm(
                          csrfToken,
                          {
                            action: `${base}/offline-places/${encodeURIComponent(p.machineId)}/end`,
                            class: "inline",
                            confirm:
                              "End this machine's place now? Its certificate keeps working " +
                              "offline until it expires, but no longer counts.",
                          },
                          { label: "End now", class: "secondary" },
                        )}
                      </td>
                    </tr>`,
                )}
              </tbody>
            </table>
          </div>`
    }
  </section>`;
}

/** The license page's seats panel: churn used, lease, reset, move and delete. */
export function seatsPanel(
  license: LicenseDetail,
  products: Product[],
  base: string,
  csrfToken: string,
): Html {
  const limit = license.maxDeactivationsPer30Days;
  const others = products.filter((p) => p.slug !== license.product);
  return html`<h2>Seats</h2>
    ${offlinePlacesPanel(license, base, csrfToken)}
    <section class="panel stack seats">
      <p class="deactivations-used">
        Deactivations by the app in the last 30 days: ${String(license.deactivationsLast30Days)}
        ${limit === null ? "(no limit on the license)" : `of ${limit}`}.
        ${
          license.machineLeaseDays === null
            ? "The product sets no machine lease."
            : `Machines unseen for ${license.machineLeaseDays} days are deactivated.`
        }
      </p>
      <div class="actions">
        ${actionForm(
          csrfToken,
          {
            action: `${base}/reset-machines`,
            class: "inline",
            confirm:
              "Deactivate every machine of this license? A machine holding an unexpired " +
              "certificate keeps an offline place until it expires.",
          },
          { label: "Reset machines", class: "danger" },
        )}
        ${
          license.activeMachines === 0
            ? actionForm(
                csrfToken,
                {
                  action: `${base}/delete`,
                  class: "inline",
                  confirm: "Delete this license and its history? This cannot be undone.",
                },
                { label: "Delete license", class: "danger" },
              )
            : ""
        }
      </div>
      ${
        others.length === 0
          ? ""
          : html`<form method="post" action="${base}/move" class="inline">
              ${csrfField(csrfToken)}
              <label
                >Move to product
                <select name="productSlug">
                  ${others.map((p) => html`<option value="${p.slug}">${p.name} (${p.slug})</option>`)}
                </select></label
              >
              <button type="submit" class="secondary">Move</button>
            </form>`
      }
    </section>`;
}

/** Active machines the license page shows at a time. */
export const machinesPageSize = 50;

const machinesHref = (base: string, page: number) =>
  page === 1 ? `${base}#machines` : `${base}?machines=${page}#machines`;

/** How many machines the license has, and which of them the page shows. */
export function machinesSummary(page: number, total: number): Html | string {
  if (total === 0) return "";
  const first = (page - 1) * machinesPageSize + 1;
  const last = Math.min(total, page * machinesPageSize);
  return html`<p class="total machines-total">
    <strong>${total}</strong> ${total === 1 ? "machine" : "machines"}${
      total > machinesPageSize && first <= total
        ? html` <span class="muted">(showing ${first}–${last})</span>`
        : ""
    }
  </p>`;
}

/** First, previous and next pages of the license's machines, as the licenses list's pager. */
export function machinesPager(base: string, page: number, total: number): Html | string {
  const pages = Math.max(1, Math.ceil(total / machinesPageSize));
  if (pages === 1 && page === 1) return "";
  const link = (to: number, label: string, rel: string) =>
    html`<a href="${machinesHref(base, to)}" rel="${rel}">${label}</a>`;
  return html`<nav class="pager machines-pager" aria-label="Pages of machines">
    ${page > 1 ? link(1, "« First", "first") : ""}
    ${page > 1 ? link(Math.min(page - 1, pages), "‹ Previous", "prev") : ""}
    <span class="muted">Page ${page} of ${pages}</span>
    ${page < pages ? link(page + 1, "Next ›", "next") : ""}
  </nav>`;
}
