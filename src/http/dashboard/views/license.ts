import type { LicenseView } from "../../../domain/licenses/license-views.js";
import type { showLicense } from "../../../domain/licenses/show-license.js";
import type { Product } from "../../../domain/products/products.js";
import type { LicenseStatus } from "../../../contracts/vocabulary.js";
import { type Form, text } from "../form-body.js";
import {
  actionForm,
  badge,
  csrfField,
  fieldError,
  formError,
  type Html,
  html,
  layout,
  type PageContext,
  when,
} from "../html.js";
import { expiredNow } from "./licenses.js";
import { machineSeatCells, machinesPager, machinesSummary, seatsPanel } from "./license-seats.js";
import { settingsInputs } from "./license-settings-form.js";

/** A license as its page shows it, with its machines. */
export type LicenseDetail = Awaited<ReturnType<typeof showLicense>>;

export function newLicenseView(
  context: PageContext,
  products: Product[],
  form: Form,
  errors: Record<string, string>,
): Html {
  return layout(
    "New license",
    "licenses",
    context,
    products.length === 0
      ? html`<div class="empty">
          <p>Create a product first.</p>
          <p><a href="/admin/products">Products</a></p>
        </div>`
      : html`<form method="post" action="/admin/licenses" class="stack panel">
          ${csrfField(context.csrfToken)} ${formError(errors)}
          <div class="grid-2">
            <label
              >Product
              <select name="productSlug">
                ${products.map((p) => html`<option value="${p.slug}" ${p.slug === text(form, "productSlug") ? html`selected` : ""}>${p.name}</option>`)}
              </select></label
            >
            <label
              >License key <span class="hint">(empty = generated)</span>
              <input
                name="licenseKey"
                value="${text(form, "licenseKey")}"
                ${errors.licenseKey ? html`aria-invalid="true"` : ""}
              />${fieldError(errors, "licenseKey")}</label
            >
          </div>
          ${settingsInputs(form, errors)}
          <div class="actions">
            <button type="submit">Create license</button><a href="/admin/licenses">Cancel</a>
          </div>
        </form>`,
  );
}

export function licenseDetailView(
  context: PageContext,
  license: LicenseDetail,
  values: Form,
  errors: Record<string, string>,
  view: { products: Product[]; machinesPage: number },
): Html {
  const { products, machinesPage } = view;
  const base = `/admin/licenses/${encodeURIComponent(license.licenseKey)}`;
  return layout(
    `License ${license.licenseKey}`,
    "licenses",
    context,
    html`${licenseTabs(license.licenseKey, "overview")}
      <section class="panel">
        ${licenseFacts(license)}
        <div class="actions spaced">${statusButtons(license, base, context.csrfToken)}</div>
      </section>
      <h2 id="machines">Active machines</h2>
      ${machinesSummary(machinesPage, license.activeMachines)}
      ${activeMachines(license, base, context.csrfToken)}
      ${machinesPager(base, machinesPage, license.activeMachines)}
      ${seatsPanel(license, products, base, context.csrfToken)} ${pastActivations(license)}
      <h2>Edit</h2>
      <form method="post" action="${base}/edit" class="stack panel">
        ${csrfField(context.csrfToken)} ${formError(errors)} ${settingsInputs(values, errors)}
        <div class="actions"><button type="submit">Save changes</button></div>
      </form>`,
  );
}

function licenseFacts(license: LicenseDetail): Html {
  return html`<dl class="facts">
    <dt>Key</dt>
    <dd>
      <span class="mono" id="license-key">${license.licenseKey}</span>
      <button type="button" class="secondary small" data-copy="license-key">Copy</button>
    </dd>
    <dt>Product</dt>
    <dd>${license.product}</dd>
    <dt>Status</dt>
    <dd>${badge(license.status)} ${expiredNow(license) ? badge("EXPIRED") : ""}</dd>
    <dt>Machines</dt>
    <dd>${license.activeMachines} of ${license.maxMachines} slots in use</dd>
    <dt>Expires</dt>
    <dd>${when(license.expiresAt)}</dd>
    <dt>Edition</dt>
    <dd>${license.editionName ?? license.edition ?? "—"}</dd>
    <dt>Features</dt>
    <dd>${license.features.length ? license.features.join(", ") : "—"}</dd>
    <dt>Customer</dt>
    <dd>
      ${license.customerName ?? "—"}
      ${license.customerEmail ? html`<span class="muted">&lt;${license.customerEmail}&gt;</span>` : ""}
    </dd>
    <dt>Note</dt>
    <dd class="note">${license.note ?? "—"}</dd>
    <dt>External id</dt>
    <dd class="mono">${license.externalId ?? "—"}</dd>
  </dl>`;
}

function statusButtons(license: LicenseView, base: string, csrfToken: string): Html {
  const button = (status: LicenseStatus, label: string, cls: string, confirm: string) =>
    license.status === status
      ? ""
      : actionForm(
          csrfToken,
          { action: `${base}/status`, class: "inline", confirm, hidden: { status } },
          { label, class: cls },
        );
  return html`${button("SUSPENDED", "Suspend", "secondary", "Suspend this license? Its machines stop validating.")}
  ${button("REVOKED", "Revoke", "danger", "Revoke this license? Its machines stop validating.")}
  ${button("ACTIVE", "Reinstate", "secondary", "Reinstate this license?")}`;
}

function activeMachines(license: LicenseDetail, base: string, csrfToken: string): Html {
  const now = Date.now();
  if (license.machines.length === 0) {
    return license.activeMachines === 0
      ? html`<div class="empty">No machine is activated on this license.</div>`
      : html`<div class="empty">No machines on this page.</div>`;
  }
  return html`<div class="table-wrap">
    <table>
      <thead>
        <tr>
          <th>Machine</th>
          <th>Name</th>
          <th>Platform</th>
          <th>App version</th>
          <th>Activated</th>
          <th>Last seen</th>
          <th>Lease expires</th>
          <th>Certificate expires</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        ${license.machines.map(
          (m) =>
            html`<tr data-machine="${m.machineId}">
              <td class="mono">${m.machineId}</td>
              <td>${m.machineName ?? ""}</td>
              <td>${m.platform ?? ""}</td>
              <td>${m.appVersion ?? html`<span class="muted">unknown</span>`}</td>
              <td>${when(m.activatedAt)}</td>
              ${machineSeatCells(m, now)}
              <td>
                ${actionForm(
                  csrfToken,
                  {
                    action: `${base}/machines/${encodeURIComponent(m.machineId)}/deactivate`,
                    confirm: `Deactivate ${m.machineId}? It frees the slot; the app must activate again.`,
                  },
                  { label: "Deactivate", class: "danger" },
                )}
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

function pastActivations(license: LicenseDetail): Html | string {
  if (license.pastActivations.length === 0) return "";
  return html`<h2>Past activations</h2>
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th>Machine</th>
            <th>Name</th>
            <th>Activated</th>
            <th>Deactivated</th>
            <th>Last seen</th>
          </tr>
        </thead>
        <tbody>
          ${license.pastActivations.map(
            (m) =>
              html`<tr>
                <td class="mono">${m.machineId}</td>
                <td>${m.machineName ?? ""}</td>
                <td>${when(m.activatedAt)}</td>
                <td>${when(m.deactivatedAt)}</td>
                <td>${when(m.lastSeenAt)}</td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>`;
}

/** The license page's tabs: its overview (settings and machines) and its history. */
export function licenseTabs(licenseKey: string, current: "overview" | "history"): Html {
  const base = `/admin/licenses/${encodeURIComponent(licenseKey)}`;
  const tab = (href: string, name: typeof current, label: string) =>
    html`<a href="${href}" ${name === current ? html`aria-current="page"` : ""}>${label}</a>`;
  return html`<nav class="tabs" aria-label="License">
    ${tab(base, "overview", "Overview")} ${tab(`${base}/history`, "history", "History")}
  </nav>`;
}
