import type { Product } from "../../../domain/products/products.js";
import { type Form, text } from "../form-body.js";
import {
  actionForm,
  csrfField,
  fieldError,
  formError,
  type Html,
  html,
  layout,
  type PageContext,
  when,
} from "../html.js";

/** What the products page shows: the products, and the new-product form as last sent. */
export interface ProductsPage {
  context: PageContext;
  products: Product[];
  form: Form;
  /** Refusals beside their fields, `_form` above; `_licensesOf`: a refused delete's product. */
  errors: Record<string, string>;
}

/** After a refused delete: the product's licenses, to move or delete. */
function licensesLink(errors: Record<string, string>): Html | string {
  const slug = errors._licensesOf;
  if (slug === undefined) return "";
  return html`<p class="licenses-of">
    <a href="/admin/licenses?product=${encodeURIComponent(slug)}">Its licenses</a>: move each to
    another product or delete it (from the license's page).
  </p>`;
}

export function productsView(page: ProductsPage): Html {
  const { context, products } = page;
  return layout(
    "Products",
    "products",
    context,
    html`${formError(page.errors)} ${licensesLink(page.errors)}
    ${products.length === 0 ? noProducts() : productTable(products, context.csrfToken)}
    ${newProductForm(context.csrfToken, page.form, page.errors)}`,
  );
}

function noProducts(): Html {
  return html`<div class="empty">
    <p>
      No products yet. Create the first one below; its slug is what your app and CI send as
      <code>productSlug</code>.
    </p>
  </div>`;
}

function productTable(products: Product[], csrfToken: string): Html {
  return html`<div class="table-wrap">
    <table>
      <thead>
        <tr>
          <th>Name</th>
          <th>Slug</th>
          <th>Created</th>
          <th>Tauri key</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        ${products.map((p) => productRow(p, csrfToken))}
      </tbody>
    </table>
  </div>`;
}

function productRow(p: Product, csrfToken: string): Html {
  return html`<tr>
    <td>
      <form method="post" action="/admin/products/${p.slug}/rename" class="actions">
        ${csrfField(csrfToken)}
        <input name="name" value="${p.name}" aria-label="Name of ${p.slug}" required />
        <button type="submit" class="secondary">Rename</button>
      </form>
    </td>
    <td class="mono">${p.slug}</td>
    <td>${when(p.createdAt)}</td>
    <td>${tauriKeyCell(p, csrfToken)}</td>
    <td class="actions">
      <a href="/admin/products/${p.slug}/keys">Signing keys and offline use</a>
      <a href="/admin/releases?product=${p.slug}">Releases</a>
      <a href="/admin/licenses?product=${p.slug}">Licenses</a>
      ${actionForm(
        csrfToken,
        {
          action: `/admin/products/${p.slug}/delete`,
          class: "inline",
          confirm: `Delete product ${p.name}? Only possible while it has no licenses or releases.`,
        },
        { label: "Delete", class: "danger" },
      )}
    </td>
  </tr>`;
}

function newProductForm(csrfToken: string, form: Form, errors: Record<string, string>): Html {
  return html`<h2>New product</h2>
    <form method="post" action="/admin/products" class="stack panel">
      ${csrfField(csrfToken)}
      <div class="grid-2">
        <label
          >Name
          <input
            name="name"
            required
            value="${text(form, "name")}"
            ${errors.name ? html`aria-invalid="true"` : ""}
          />${fieldError(errors, "name")}</label
        >
        <label
          >Slug <span class="hint">(lowercase, digits, dashes)</span>
          <input
            name="slug"
            required
            pattern="[a-z0-9]([a-z0-9\\-]*[a-z0-9])?"
            value="${text(form, "slug")}"
            ${errors.slug ? html`aria-invalid="true"` : ""}
          />${fieldError(errors, "slug")}</label
        >
      </div>
      <div class="actions"><button type="submit">Create product</button></div>
    </form>`;
}

/** The product's Tauri key id (or "not set"), with a form to set it and a button to clear it. */
function tauriKeyCell(product: Product, csrfToken: string): Html {
  const set = product.tauriPublicKey !== null;
  return html`${
      set
        ? html`<span class="mono" title="minisign key id"
            >${product.tauriKeyId ?? "unreadable"}</span
          >`
        : html`<span class="hint">not set</span>`
    }
    <details>
      <summary>${set ? "Change" : "Set"}</summary>
      <form method="post" action="/admin/products/${product.slug}/tauri-key" class="stack">
        ${csrfField(csrfToken)}
        <label
          >Public key <span class="hint">(tauri.conf.json plugins.updater.pubkey)</span>
          <textarea name="tauriPublicKey" rows="3" required></textarea>
        </label>
        <div class="actions"><button type="submit">Save key</button></div>
      </form>
    </details>
    ${
      set
        ? actionForm(
            csrfToken,
            {
              action: `/admin/products/${product.slug}/tauri-key/clear`,
              class: "inline",
              confirm: `Clear the Tauri key of ${product.name}? Publish will stop checking signatures.`,
            },
            { label: "Clear", class: "secondary" },
          )
        : ""
    }`;
}
