import type { browseLicenses, LicenseSort } from "../../../domain/licenses/list-licenses.js";
import type { LicenseView } from "../../../domain/licenses/license-views.js";
import { isExpired } from "../../../domain/licenses/license-record.js";
import type { Product } from "../../../domain/products/products.js";
import { licenseStatuses } from "../../../contracts/vocabulary.js";
import { badge, type Html, html, layout, type PageContext, when } from "../html.js";

/** One page of the list: its licenses and how many match the filters. */
export type LicensePage = Awaited<ReturnType<typeof browseLicenses>>;

/** The list's filters, order and page as the query gives them. */
export interface ListFilters {
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
export const pageSize = 50;

/** Expired as the license endpoints decide it (license-record's isExpired). */
export function expiredNow(license: LicenseView): boolean {
  return isExpired(license.expiresAt === null ? null : Date.parse(license.expiresAt), Date.now());
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

function option(value: string, label: string, current: string): Html {
  return html`<option value="${value}" ${value === current ? html`selected` : ""}>
    ${label}
  </option>`;
}

/** The list of licenses: its filters, one page of licenses, or why the filters are refused. */
export function licenseListView(
  context: PageContext,
  filters: ListFilters,
  products: Product[],
  page: LicensePage,
  error: string,
): Html {
  return layout("Licenses", "licenses", context, listContent(filters, products, page, error));
}

function listContent(
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
