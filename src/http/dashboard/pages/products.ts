import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import {
  createProduct,
  deleteProduct,
  renameProduct,
  setTauriPublicKey,
} from "../../../actions/products.js";
import { listLicenses } from "../../../domain/licenses/manage-licenses.js";
import { listProducts, newProductErrors, type Product } from "../../../domain/products/products.js";
import type { Signing } from "../../../domain/signing/key-ring.js";
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
import {
  adminActor,
  contextOf,
  errorsFor,
  type Form,
  FormCheck,
  sendPage,
  text,
} from "../page-kit.js";

const done: Record<string, string> = {
  created: "Product created.",
  deleted: "Product deleted.",
  renamed: "Product renamed.",
  "tauri-key-set": "Tauri public key set: publish now refuses signatures not made by it.",
  "tauri-key-cleared": "Tauri public key cleared: publish no longer checks signatures.",
};

/** What the products page shows: the products, and the new-product form as last sent. */
interface ProductsPage {
  context: PageContext;
  products: Product[];
  form: Form;
  errors: Record<string, string>;
  flash?: string;
}

const productFields = ["slug", "name"];

export function productPages(app: FastifyInstance, db: Kysely<DB>, signing: Signing): void {
  const render = async (
    request: FastifyRequest,
    reply: FastifyReply,
    view: Omit<ProductsPage, "context" | "products">,
    status = 200,
  ) => {
    const page = { ...view, context: contextOf(request), products: await listProducts(db) };
    return sendPage(reply, productsView(page), status);
  };
  /** A POST: do the change and go back to the list, or show the list with the refusal. */
  const change = (
    route: string,
    refusedStatus: number,
    act: (request: FastifyRequest<{ Params: { slug: string }; Body: Form }>) => Promise<string>,
    fields: string[] = [],
  ) =>
    app.post<{ Params: { slug: string }; Body: Form }>(route, async (request, reply) => {
      try {
        return reply.redirect(`/admin/products?done=${await act(request)}`, 303);
      } catch (err) {
        const form = fields.length > 0 ? request.body : {};
        return render(request, reply, { form, errors: errorsFor(err, fields) }, refusedStatus);
      }
    });

  app.get<{ Querystring: { done?: string } }>("/admin/products", async (request, reply) =>
    render(request, reply, { form: {}, errors: {}, flash: done[request.query.done ?? ""] }),
  );

  change(
    "/admin/products",
    400,
    async (request) => {
      const input = { slug: text(request.body, "slug"), name: text(request.body, "name") };
      FormCheck.refuse(newProductErrors(input));
      await createProduct(db, adminActor(request), input, signing.masterKey);
      return "created";
    },
    productFields,
  );
  change("/admin/products/:slug/rename", 400, async (request) => {
    const name = text(request.body, "name");
    await renameProduct(db, adminActor(request), request.params.slug, name);
    return "renamed";
  });
  change("/admin/products/:slug/tauri-key", 400, async (request) => {
    const key = text(request.body, "tauriPublicKey");
    await setTauriPublicKey(db, adminActor(request), request.params.slug, key);
    return "tauri-key-set";
  });
  change("/admin/products/:slug/tauri-key/clear", 404, async (request) => {
    await setTauriPublicKey(db, adminActor(request), request.params.slug, null);
    return "tauri-key-cleared";
  });
  app.post<{ Params: { slug: string } }>("/admin/products/:slug/delete", async (request, reply) => {
    const { slug } = request.params;
    try {
      await deleteProduct(db, adminActor(request), slug);
      return reply.redirect("/admin/products?done=deleted", 303);
    } catch (err) {
      const errors = errorsFor(err, []);
      if (await hasLicenses(db, slug)) errors._licensesOf = slug;
      return render(request, reply, { form: {}, errors }, 409);
    }
  });
}

/** Whether the product has a license (the refused delete links to them). */
async function hasLicenses(db: Kysely<DB>, slug: string): Promise<boolean> {
  const page = await listLicenses(db, { product: slug, limit: 1 });
  return page.items.length > 0;
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

function productsView(page: ProductsPage): Html {
  const { context, products } = page;
  return layout(
    "Products",
    "products",
    context,
    html`${formError(page.errors)} ${licensesLink(page.errors)}
    ${products.length === 0 ? noProducts() : productTable(products, context.csrfToken)}
    ${newProductForm(context.csrfToken, page.form, page.errors)}`,
    page.flash,
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
