import { ignoredEventsDays } from "../../../domain/overview/ignored-events.js";
import {
  type Overview,
  overviewDays,
  type OverviewStatus,
} from "../../../domain/overview/overview.js";
import type { Product } from "../../../domain/products/products.js";
import type { LicenseEvent } from "../../../domain/releases/usage-counts.js";
import {
  badge,
  type Html,
  html,
  layout,
  type PageContext,
  productPicker,
  raw,
  when,
} from "../html.js";
import { machinesPerVersion } from "./versions-in-use.js";

/** What the overview page shows: the products to pick from, and the numbers of the picked one. */
export interface OverviewPage {
  context: PageContext;
  products: Product[];
  shown: Overview;
}

export function overviewView({ context, products, shown }: OverviewPage): Html {
  const content = html`<link rel="stylesheet" href="/admin/assets/charts.css" />
    <script src="/admin/assets/charts.js" defer></script>
    ${productPicker(products, shown.product ?? "", "All products")}
    <div class="overview-grid">
      ${licenseCounts(shown)}
      ${chart("Activations per day", shown, [
        ["activation", "Activations", "#3557d4"],
        ["deactivation", "Deactivations", "#b54708"],
        ["activation_refused", "Refused", "#b42318"],
      ])}
      ${chart("Validations per day", shown, [
        ["validation", "Validations", "#157f3b"],
        ["validation_refused", "Refused", "#b42318"],
      ])}
      ${ignoredEvents(shown)} ${failingEndpoints(shown)} ${rollouts(shown)} ${refusals(shown)}
      ${atLimit(shown)} ${versionsInUse(shown)}
    </div>`;
  return layout("Overview", "overview", context, content);
}

/** The licenses list that shows a bucket: EXPIRED is the ACTIVE licenses past their expiry. */
const bucketQuery: Record<OverviewStatus, string> = {
  ACTIVE: "status=ACTIVE&expired=no",
  EXPIRED: "status=ACTIVE&expired=yes",
  SUSPENDED: "status=SUSPENDED",
  REVOKED: "status=REVOKED",
};

function licenseCounts(shown: Overview): Html {
  const product = shown.product ? `&product=${encodeURIComponent(shown.product)}` : "";
  const total = shown.byStatus.reduce((sum, s) => sum + s.count, 0);
  return html`<section class="panel" id="licenses-by-status">
    <h2>Licenses</h2>
    <dl class="facts">
      <dt>All</dt>
      <dd><strong>${total}</strong></dd>
      ${shown.byStatus.map(
        (s) =>
          html`<dt>${badge(s.status)}</dt>
            <dd>
              <a href="/admin/licenses?${bucketQuery[s.status]}${product}">${s.count}</a>
            </dd>`,
      )}
      <dt>Expiring within 30 days</dt>
      <dd><a href="/admin/licenses?only=expiring${product}">${shown.expiringSoon}</a></dd>
      <dt>At their machine limit</dt>
      <dd><a href="/admin/licenses?only=at-limit${product}">${shown.atLimit.total}</a></dd>
      <dt>Machine leases ending within 7 days</dt>
      <dd>${shown.leasesEndingSoon}</dd>
    </dl>
  </section>`;
}

/** A line chart of daily counts, with the same numbers as a table for those who cannot see it. */
function chart(
  title: string,
  shown: Overview,
  series: Array<[LicenseEvent, string, string]>,
): Html {
  const data = {
    labels: shown.days,
    series: series.map(([event, label, color]) => ({ label, color, values: shown.daily[event] })),
  };
  const totals = series.map(
    ([event, label]) => html`<li>${label}: ${shown.daily[event].reduce((a, b) => a + b, 0)}</li>`,
  );
  // JSON in a script element: "<" escaped so no text can close it.
  const json = JSON.stringify(data).replaceAll("<", "\\u003c");
  return html`<section class="panel">
    <figure class="chart">
      <figcaption>${title} <span class="muted">(last ${overviewDays} days, UTC)</span></figcaption>
      <div class="plot"></div>
      <script type="application/json">
        ${raw(json)}
      </script>
    </figure>
    <ul class="totals">
      ${totals}
    </ul>
  </section>`;
}

/** The payment integrations whose events were ignored lately, each a link to its page; else nothing. */
function ignoredEvents(shown: Overview): Html | string {
  const ignored = shown.ignoredPaymentEvents;
  if (ignored.length === 0) return "";
  return html`<section class="panel" id="ignored-payment-events">
    <h2>
      Ignored payment events <span class="muted">${ignored.reduce((n, i) => n + i.count, 0)}</span>
    </h2>
    <p class="alert" role="alert">
      Payment events were ignored in the last ${ignoredEventsDays} days: their sales made no
      license. Fix the cause (a price mapping), then replay them.
    </p>
    <ul class="attention">
      ${ignored.map(
        (i) =>
          html`<li>
            <a href="/admin/integrations/${encodeURIComponent(i.integrationId)}"
              >${i.provider} for ${i.product}</a
            >
            <span class="muted">${i.count} ignored ${i.count === 1 ? "event" : "events"}</span>
          </li>`,
      )}
    </ul>
  </section>`;
}

/** The webhook endpoints that fail or that the service disabled, each a link to its page. */
function failingEndpoints(shown: Overview): Html {
  const failing = shown.failingEndpoints;
  return html`<section class="panel" id="failing-endpoints">
    <h2>Failing webhook endpoints <span class="muted">${failing.length}</span></h2>
    ${
      failing.length === 0
        ? html`<p class="muted">No webhook endpoint is failing.</p>`
        : html`<ul class="attention">
            ${failing.map(
              (e) =>
                html`<li>
                  <a class="url" href="/admin/webhooks/${encodeURIComponent(e.id)}">${e.url}</a>
                  ${e.enabled ? "" : badge("disabled")}
                  <span class="muted"
                    >${e.consecutiveFailures} failed
                    ${e.consecutiveFailures === 1 ? "attempt" : "attempts"} in a
                    row${e.failingSince === null ? "" : html`, since ${when(e.failingSince)}`}</span
                  >
                  ${
                    e.disabledReason === null
                      ? ""
                      : html`<span class="muted">Disabled: ${e.disabledReason}</span>`
                  }
                </li>`,
            )}
          </ul>`
    }
  </section>`;
}

/** The versions in a rollout, per product, with the share of machines each reaches now. */
function rollouts(shown: Overview): Html {
  const { rollouts } = shown;
  return html`<section class="panel" id="rollouts">
    <h2>Rollouts in progress <span class="muted">${rollouts.length}</span></h2>
    ${
      rollouts.length === 0
        ? html`<p class="muted">No version is in a rollout.</p>`
        : html`<ul class="attention">
            ${rollouts.map(
              (r) =>
                html`<li data-rollout="${r.product} ${r.version}">
                  <a href="/admin/releases?product=${encodeURIComponent(r.product)}"
                    >${r.product}</a
                  >
                  <span class="mono">${r.version}</span> ${badge(r.channel)}
                  <strong>${r.state === "paused" ? "paused at" : "at"} ${r.percent} %</strong>
                  <span class="muted">since ${when(r.startedAt)}</span>
                </li>`,
            )}
          </ul>`
    }
  </section>`;
}

function refusals(shown: Overview): Html {
  return html`<section class="panel" id="refusals">
    <h2>Refused, by code <span class="muted">last ${overviewDays} days</span></h2>
    ${
      shown.refusals.length === 0
        ? html`<p class="muted">Nothing refused.</p>`
        : html`<table>
            <thead>
              <tr>
                <th>Request</th>
                <th>Code</th>
                <th>Count</th>
              </tr>
            </thead>
            <tbody>
              ${shown.refusals.map(
                (r) =>
                  html`<tr>
                    <td>${r.event === "activation_refused" ? "Activate" : "Validate"}</td>
                    <td class="mono">${r.code}</td>
                    <td>${r.count}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
  </section>`;
}

function atLimit(shown: Overview): Html {
  const { items, total } = shown.atLimit;
  return html`<section class="panel" id="at-limit">
    <h2>At their machine limit <span class="muted">${total}</span></h2>
    ${
      items.length === 0
        ? html`<p class="muted">No license uses all its machine slots.</p>`
        : html`<ul>
            ${items.map(
              (l) =>
                html`<li>
                  <a class="mono" href="/admin/licenses/${encodeURIComponent(l.licenseKey)}"
                    >${l.licenseKey}</a
                  >
                  ${l.customerName ?? ""}
                  <span class="muted">${l.activeMachines} / ${l.maxMachines}</span>
                </li>`,
            )}
          </ul>`
    }
  </section>`;
}

function versionsInUse(shown: Overview): Html | string {
  if (shown.usage === null) return "";
  const { machinesByVersion, updateChecks } = shown.usage;
  const checks = updateChecks.reduce((sum, row) => sum + row.count, 0);
  const releases = `/admin/releases?product=${encodeURIComponent(shown.usage.product)}`;
  return html`<section class="panel" id="versions-in-use">
    <h2>Versions in use <span class="muted">active machines</span></h2>
    ${machinesPerVersion(machinesByVersion, 10)}
    <p class="muted">
      ${checks} update checks in the last ${overviewDays} days (<a
        href="${releases}#versions-in-use"
        >by version, platform and channel</a
      >).
    </p>
  </section>`;
}
