import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import { type DB } from "../../../db/schema.js";
import {
  createLicense,
  deactivateMachineByAdmin,
  setLicenseStatus,
  updateLicense,
} from "../../../actions/licenses.js";
import {
  browseLicenses,
  licenseKeyErrors,
  licenseSettingsErrors,
  type LicenseFilter,
  type LicenseSort,
  licenseSorts,
  type LicenseView,
  showLicense,
} from "../../../domain/licenses/manage-licenses.js";
import { normalizeLicenseKey } from "../../../domain/licenses/license-key.js";
import { isExpired, licenseKeyById } from "../../../domain/licenses/license-record.js";
import { licensesCsv } from "./licenses-csv.js";
import { listProducts, type Product } from "../../../domain/products/products.js";
import { ShipkeyError } from "../../../errors.js";
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
import {
  adminActor,
  contextOf,
  errorsFor,
  expiryFrom,
  type Form,
  FormCheck,
  integerFrom,
  localValue,
  sendPage,
  text,
} from "../page-kit.js";
import { type LicenseStatus, licenseStatuses } from "../../../contracts/vocabulary.js";
import {
  licenseSeatPages,
  machineSeatCells,
  machinesPager,
  machinesPageSize,
  machinesSummary,
  seatsDone,
  seatsPanel,
} from "./license-seats.js";
import { licenseHistoryPages, licenseTabs } from "./license-history.js";

const licenseFields = [
  "productSlug",
  "licenseKey",
  "maxMachines",
  "status",
  "expiresAt",
  "edition",
  "editionName",
  "features",
  "customerName",
  "customerEmail",
  "note",
  "externalId",
  "maxDeactivationsPer30Days",
];

const done: Record<string, string> = {
  created: "License created.",
  updated: "License updated.",
  suspended: "License suspended.",
  revoked: "License revoked.",
  reinstated: "License reinstated.",
  deactivated: "Machine deactivated; its slot is free.",
  ...seatsDone,
};

/** Expired as the license endpoints decide it (license-record's isExpired). */
function expiredNow(license: LicenseView): boolean {
  return isExpired(license.expiresAt === null ? null : Date.parse(license.expiresAt), Date.now());
}

/**
 * The license settings the form gives, every invalid field refused at once (with `more`, the
 * refusals of fields beyond the settings).
 */
function settingsFrom(form: Form, more: readonly ShipkeyError[] = []) {
  const check = new FormCheck();
  const features = text(form, "features");
  const settings = {
    maxMachines: check.field(() => integerFrom(form, "maxMachines"), 0),
    expiresAt: check.field(() => expiryFrom(form, "expiresAt"), null),
    edition: text(form, "edition") || null,
    editionName: text(form, "editionName") || null,
    features:
      features === ""
        ? []
        : features
            .split(",")
            .map((f) => f.trim())
            .filter((f) => f !== ""),
    customerName: text(form, "customerName") || null,
    customerEmail: text(form, "customerEmail") || null,
    note: text(form, "note") || null,
    externalId: text(form, "externalId") || null,
    maxDeactivationsPer30Days: check.field(
      () =>
        text(form, "maxDeactivationsPer30Days") === ""
          ? null
          : integerFrom(form, "maxDeactivationsPer30Days"),
      null,
    ),
  };
  check.add(licenseSettingsErrors(settings));
  check.add(more);
  check.done();
  return settings;
}

/** The refusals of a license key typed in the new-license form ("" is a generated key). */
function givenKeyErrors(form: Form): ShipkeyError[] {
  const given = text(form, "licenseKey");
  return given === "" ? [] : licenseKeyErrors(normalizeLicenseKey(given));
}

/** A license as its page shows it, with its machines. */
type LicenseDetail = Awaited<ReturnType<typeof showLicense>>;

function settingsInputs(form: Form, errors: Record<string, string>): Html {
  const input = (name: string, label: string, type = "text", hint = "") =>
    html`<label
      >${label}${hint ? html` <span class="hint">${hint}</span>` : ""}
      <input
        name="${name}"
        type="${type}"
        value="${text(form, name)}"
        ${errors[name] ? html`aria-invalid="true" aria-describedby="${name}-error"` : ""}
      />
      ${fieldError(errors, name)}</label
    >`;
  return html`<div class="grid-2">
      ${input("maxMachines", "Machine slots", "number")}
      ${input("expiresAt", "Expires", "datetime-local", "(UTC, empty = never)")}
      ${input("edition", "Edition", "text", "(e.g. pro)")}
      ${input("editionName", "Edition name", "text", "(e.g. Professional)")}
    </div>
    ${input("features", "Features", "text", "(comma-separated)")}
    <div class="grid-2">
      ${input("customerName", "Customer name")} ${input("customerEmail", "Customer email", "email")}
    </div>
    ${input("externalId", "External id", "text", "(e.g. an order id; unique per product)")}
    ${input(
      "maxDeactivationsPer30Days",
      "Deactivations by the app in 30 days",
      "number",
      "(empty = the product's limit)",
    )}
    <label
      >Note
      <textarea name="note" rows="3">${text(form, "note")}</textarea
      >${fieldError(errors, "note")}</label
    >`;
}

/** One page of the list: its licenses and how many match the filters. */
type LicensePage = Awaited<ReturnType<typeof browseLicenses>>;

/** The list's filters, order and page as the query gives them. */
interface ListFilters {
  q: string;
  product: string;
  status: string;
  expired: string;
  /** "at-limit" or "expiring" (within 30 days). */
  only: string;
  machine: string;
  sort: LicenseSort;
  dir: "asc" | "desc";
  page: number;
}

/** Licenses a list page shows. */
const pageSize = 50;

export function licensePages(app: FastifyInstance, db: Kysely<DB>): void {
  app.get<{ Querystring: Form }>("/admin/licenses", async (request, reply) =>
    sendPage(reply, await listPage(db, request)),
  );

  // Every license the list's filters match, as CSV, written a page at a time.
  app.get<{ Querystring: Form }>("/admin/licenses/export.csv", async (request, reply) => {
    const filter = filterOf(filtersFrom(request.query));
    const day = new Date().toISOString().slice(0, 10);
    return reply
      .type("text/csv; charset=utf-8")
      .header("content-disposition", `attachment; filename="licenses-${day}.csv"`)
      .send(licensesCsv(db, filter));
  });

  app.get("/admin/licenses/new", async (request, reply) =>
    sendPage(reply, await newLicensePage(db, request, { maxMachines: "1" }, {})),
  );

  app.post<{ Body: Form }>("/admin/licenses", async (request, reply) => {
    const form = request.body;
    try {
      const license = await createLicense(db, adminActor(request), {
        ...settingsFrom(form, givenKeyErrors(form)),
        productSlug: text(form, "productSlug"),
        licenseKey: text(form, "licenseKey") || undefined,
      });
      return toLicense(reply, license.licenseKey, "created");
    } catch (err) {
      const errors = errorsFor(err, licenseFields);
      return sendPage(reply, await newLicensePage(db, request, form, errors), 400);
    }
  });

  // The audit log names licenses by id (it holds no license key): its links land here.
  app.get<{ Params: { id: string } }>("/admin/licenses/by-id/:id", async (request, reply) => {
    const key = await licenseKeyById(db, request.params.id);
    return reply.redirect(`/admin/licenses/${encodeURIComponent(key)}`, 302);
  });
  licenseDetailPages(app, db);
  licenseSeatPages(app, db);
  licenseHistoryPages(app, db);
}

/** One license's page and its forms: settings, status, a machine's deactivation. */
function licenseDetailPages(app: FastifyInstance, db: Kysely<DB>): void {
  app.get<{ Params: { key: string }; Querystring: Form }>(
    "/admin/licenses/:key",
    async (request, reply) => {
      const doneKey = text(request.query, "done");
      const flash = Object.hasOwn(done, doneKey) ? done[doneKey] : undefined;
      const machinesPage = pageNumber(text(request.query, "machines"));
      const page = await detailPage(db, request, request.params.key, null, {}, flash, machinesPage);
      return sendPage(reply, page);
    },
  );

  app.post<{ Params: { key: string }; Body: Form }>(
    "/admin/licenses/:key/edit",
    async (request, reply) => {
      const { key } = request.params;
      try {
        const settings = settingsFrom(request.body);
        const license = await updateLicense(db, adminActor(request), key, settings);
        return toLicense(reply, license.licenseKey, "updated");
      } catch (err) {
        const errors = errorsFor(err, licenseFields);
        return sendPage(reply, await detailPage(db, request, key, request.body, errors), 400);
      }
    },
  );

  app.post<{ Params: { key: string }; Body: Form }>(
    "/admin/licenses/:key/status",
    async (request, reply) => {
      const status = statusFrom(request.body);
      const { key } = request.params;
      const license = await setLicenseStatus(db, adminActor(request), key, status);
      const action =
        status === "ACTIVE" ? "reinstated" : status === "SUSPENDED" ? "suspended" : "revoked";
      return toLicense(reply, license.licenseKey, action);
    },
  );

  app.post<{ Params: { key: string; machineId: string } }>(
    "/admin/licenses/:key/machines/:machineId/deactivate",
    async (request, reply) => {
      const { key, machineId } = request.params;
      await deactivateMachineByAdmin(db, adminActor(request), key, machineId);
      return toLicense(reply, key, "deactivated");
    },
  );
}

function toLicense(reply: FastifyReply, key: string, to: string): FastifyReply {
  return reply.redirect(`/admin/licenses/${encodeURIComponent(key)}?done=${to}`, 303);
}

function statusFrom(form: Form): LicenseStatus {
  const status = licenseStatuses.find((known) => known === text(form, "status"));
  if (status === undefined) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", "unknown status", { field: "status" });
  }
  return status;
}

async function newLicensePage(
  db: Kysely<DB>,
  request: FastifyRequest,
  form: Form,
  errors: Record<string, string>,
): Promise<Html> {
  return newLicenseView(contextOf(request), await listProducts(db), form, errors);
}

/**
 * A license's page: its settings form (as stored, or as last sent when refused) and one numbered
 * page of its active machines.
 */
async function detailPage(
  db: Kysely<DB>,
  request: FastifyRequest,
  key: string,
  form: Form | null,
  errors: Record<string, string>,
  flash?: string,
  machinesPage = 1,
): Promise<Html> {
  const license = await showLicense(db, key, Date.now(), {
    limit: machinesPageSize,
    offset: (machinesPage - 1) * machinesPageSize,
  });
  return licenseDetailView(contextOf(request), license, form ?? formOf(license), errors, {
    flash,
    products: await listProducts(db),
    machinesPage,
  });
}

/** The list of licenses: the query's filters → one page of licenses → its view. */
async function listPage(
  db: Kysely<DB>,
  request: FastifyRequest<{ Querystring: Form }>,
): Promise<Html> {
  const filters = filtersFrom(request.query);
  let page: LicensePage = { items: [], total: 0 };
  let error = "";
  try {
    page = await browseLicenses(db, filterOf(filters), {
      sort: filters.sort,
      descending: filters.dir === "desc",
      offset: (filters.page - 1) * pageSize,
    });
  } catch (err) {
    if (!(err instanceof ShipkeyError)) throw err;
    error = err.message;
  }
  const products = await listProducts(db);
  const content = licenseListView(filters, products, page, error);
  return layout("Licenses", "licenses", contextOf(request), content);
}

/** A page number from the query: a whole number from 1, else the first page. */
function pageNumber(value: string): number {
  const page = Number(value);
  return Number.isSafeInteger(page) && page >= 1 ? page : 1;
}

function filtersFrom(query: Form): ListFilters {
  const sort = licenseSorts.find((s) => s === text(query, "sort")) ?? "created";
  return {
    q: text(query, "q"),
    product: text(query, "product"),
    status: text(query, "status"),
    expired: text(query, "expired"),
    only: text(query, "only"),
    machine: text(query, "machine"),
    sort,
    dir: text(query, "dir") === "asc" ? "asc" : "desc",
    page: pageNumber(text(query, "page")),
  };
}

function filterOf(filters: ListFilters): LicenseFilter {
  const { status, expired, only } = filters;
  return {
    product: filters.product || undefined,
    status: (licenseStatuses as readonly string[]).includes(status)
      ? (status as LicenseStatus)
      : undefined,
    expired: expired === "yes" ? true : expired === "no" ? false : undefined,
    atLimit: only === "at-limit" ? true : undefined,
    expiringWithinDays: only === "expiring" ? 30 : undefined,
    machineId: filters.machine || undefined,
    q: filters.q || undefined,
    limit: pageSize,
  };
}

/** The list's address with some of its parameters changed (the defaults left out). */
function listHref(filters: ListFilters, changes: Partial<ListFilters>, path = "/admin/licenses") {
  const all = { ...filters, ...changes };
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(all)) {
    const isDefault =
      (name === "sort" && value === "created") ||
      (name === "dir" && value === "desc") ||
      (name === "page" && value === 1);
    if (value !== "" && !isDefault) params.set(name, String(value));
  }
  const query = params.toString();
  return query === "" ? path : `${path}?${query}`;
}

/** The edit form's values for a license as stored. */
function formOf(license: LicenseView): Form {
  return {
    maxMachines: String(license.maxMachines),
    expiresAt: localValue(license.expiresAt),
    edition: license.edition ?? "",
    editionName: license.editionName ?? "",
    features: license.features.join(", "),
    customerName: license.customerName ?? "",
    customerEmail: license.customerEmail ?? "",
    note: license.note ?? "",
    externalId: license.externalId ?? "",
    maxDeactivationsPer30Days:
      license.maxDeactivationsPer30Days === null ? "" : String(license.maxDeactivationsPer30Days),
  };
}

function option(value: string, label: string, current: string): Html {
  return html`<option value="${value}" ${value === current ? html`selected` : ""}>
    ${label}
  </option>`;
}

function licenseListView(
  filters: ListFilters,
  products: Product[],
  page: LicensePage,
  error: string,
): Html {
  return html`${listFilters(filters, products)}
  ${error ? html`<p class="alert" role="alert">${error}</p>` : ""}
  ${
    page.total === 0
      ? html`<div class="empty">
          <p>No licenses match.</p>
          <p>
            <a href="/admin/licenses/new">Create a license</a> or issue them from your payment
            webhook with the admin API.
          </p>
        </div>`
      : html`${listSummary(filters, page.total)} ${licenseTable(filters, page.items)}
        ${pager(filters, page.total)}`
  }`;
}

function listSummary(filters: ListFilters, total: number): Html {
  const first = (filters.page - 1) * pageSize + 1;
  const last = Math.min(total, filters.page * pageSize);
  return html`<div class="actions list-summary">
    <p class="total">
      <strong>${total}</strong> ${total === 1 ? "license" : "licenses"}${
        first <= total ? html` <span class="muted">(showing ${first}–${last})</span>` : ""
      }
    </p>
    <a
      class="button secondary"
      href="${listHref(filters, { page: 1 }, "/admin/licenses/export.csv")}"
      >Export CSV</a
    >
  </div>`;
}

function pager(filters: ListFilters, total: number): Html {
  const pages = Math.max(1, Math.ceil(total / pageSize));
  const link = (to: number, label: string, rel: string) =>
    html`<a href="${listHref(filters, { page: to })}" rel="${rel}">${label}</a>`;
  return html`<nav class="pager" aria-label="Pages">
    ${filters.page > 1 ? link(1, "« First", "first") : ""}
    ${filters.page > 1 ? link(Math.min(filters.page - 1, pages), "‹ Previous", "prev") : ""}
    <span class="muted">Page ${filters.page} of ${pages}</span>
    ${filters.page < pages ? link(filters.page + 1, "Next ›", "next") : ""}
  </nav>`;
}

function listFilters(filters: ListFilters, products: Product[]): Html {
  const { q, product, status, expired, only, machine } = filters;
  return html`<form method="get" class="toolbar" role="search">
    <label
      >Search
      <input
        type="search"
        name="q"
        value="${q}"
        placeholder="Key prefix, customer, external id, note"
    /></label>
    <label
      >Product
      <select name="product">
        ${option("", "All", product)}${products.map((p) => option(p.slug, p.name, product))}
      </select></label
    >
    <label
      >Status
      <select name="status">
        ${option("", "All", status)}${licenseStatuses.map((s) => option(s, s, status))}
      </select></label
    >
    <label
      >Expiry
      <select name="expired">
        ${option("", "All", expired)}${option("no", "Not expired", expired)}${option("yes", "Expired", expired)}
      </select></label
    >
    <label
      >Only
      <select name="only">
        ${option("", "All", only)}${option("at-limit", "At machine limit", only)}${option("expiring", "Expiring within 30 days", only)}
      </select></label
    >
    <label>Machine id <input type="search" name="machine" value="${machine}" /></label>
    <input type="hidden" name="sort" value="${filters.sort}" />
    <input type="hidden" name="dir" value="${filters.dir}" />
    <button type="submit" class="secondary">Filter</button>
    <a class="button" href="/admin/licenses/new">New license</a>
  </form>`;
}

/** A column heading that sorts by its column: descending first, then the other way. */
function sortHeading(filters: ListFilters, sort: LicenseSort, label: string): Html {
  const current = filters.sort === sort;
  const dir = current && filters.dir === "desc" ? "asc" : "desc";
  const ariaSort = current ? (filters.dir === "desc" ? "descending" : "ascending") : "none";
  const arrow = current ? (filters.dir === "desc" ? " ↓" : " ↑") : "";
  return html`<th aria-sort="${ariaSort}">
    <a href="${listHref(filters, { sort, dir, page: 1 })}" data-sort="${sort}">${label}${arrow}</a>
  </th>`;
}

function licenseTable(filters: ListFilters, licenses: LicenseView[]): Html {
  return html`<div class="table-wrap">
    <table class="licenses">
      <thead>
        <tr>
          <th>Key</th>
          <th>Product</th>
          <th>Status</th>
          ${sortHeading(filters, "machines", "Machines")}
          ${sortHeading(filters, "customer", "Customer")}
          ${sortHeading(filters, "created", "Created")}
          ${sortHeading(filters, "expires", "Expires")}
        </tr>
      </thead>
      <tbody>
        ${licenses.map(licenseRow)}
      </tbody>
    </table>
  </div>`;
}

function licenseRow(l: LicenseView): Html {
  return html`<tr>
    <td>
      <a class="mono" href="/admin/licenses/${encodeURIComponent(l.licenseKey)}">${l.licenseKey}</a>
    </td>
    <td>${l.product}</td>
    <td>${badge(l.status)} ${expiredNow(l) ? badge("EXPIRED") : ""}</td>
    <td>${l.activeMachines} / ${l.maxMachines}</td>
    <td>
      ${l.customerName ?? ""}<br /><span class="muted">${l.customerEmail ?? ""}</span
      >${l.externalId ? html`<br /><span class="muted mono">${l.externalId}</span>` : ""}
    </td>
    <td>${when(l.createdAt)}</td>
    <td>${when(l.expiresAt)}</td>
  </tr>`;
}

function newLicenseView(
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

function licenseDetailView(
  context: PageContext,
  license: LicenseDetail,
  values: Form,
  errors: Record<string, string>,
  view: { flash: string | undefined; products: Product[]; machinesPage: number },
): Html {
  const { flash, products, machinesPage } = view;
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
    flash,
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
