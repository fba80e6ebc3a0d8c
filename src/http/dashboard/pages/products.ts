import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import {
  createProductAudited,
  deleteProductAudited,
  renameProductAudited,
  setTauriPublicKeyAudited,
} from "../../../domain/audit/audited-actions.js";
import { listProducts, type Product } from "../../../domain/products/products.js";
import { ShipkeyError } from "../../../errors.js";
import type { Signing } from "../../../domain/signing/key-ring.js";
import {
  actionForm,
  csrfField,
  fieldError,
  html,
  layout,
  type PageContext,
  when,
} from "../html.js";
import { adminActor, contextOf, errorsFor, type Form, sendPage, text } from "../page-kit.js";

const done: Record<string, string> = {
  created: "Product created.",
  deleted: "Product deleted.",
  renamed: "Product renamed.",
  "tauri-key-set": "Tauri public key set: publish now refuses signatures not made by it.",
  "tauri-key-cleared": "Tauri public key cleared: publish no longer checks signatures.",
};

export function productPages(app: FastifyInstance, db: Kysely<DB>, signing: Signing): void {
  const page = async (
    context: PageContext,
    form: Form,
    errors: Record<string, string>,
    flash?: string,
  ) => {
    const products = await listProducts(db);
    return layout(
      "Products",
      "products",
      context,
      html`${errors._form ? html`<p class="alert" role="alert">${errors._form}</p>` : ""}
        ${
          products.length === 0
            ? html`<div class="empty">
                <p>
                  No products yet. Create the first one below; its slug is what your app and CI send
                  as <code>productSlug</code>.
                </p>
              </div>`
            : html`<div class="table-wrap">
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
                    ${products.map(
                      (p) =>
                        html`<tr>
                          <td>
                            <form
                              method="post"
                              action="/admin/products/${p.slug}/rename"
                              class="actions"
                            >
                              ${csrfField(context.csrfToken)}
                              <input
                                name="name"
                                value="${p.name}"
                                aria-label="Name of ${p.slug}"
                                required
                              />
                              <button type="submit" class="secondary">Rename</button>
                            </form>
                          </td>
                          <td class="mono">${p.slug}</td>
                          <td>${when(p.createdAt)}</td>
                          <td>${tauriKeyCell(p, context.csrfToken)}</td>
                          <td class="actions">
                            <a href="/admin/products/${p.slug}/keys"
                              >Signing keys and offline use</a
                            >
                            <a href="/admin/releases?product=${p.slug}">Releases</a>
                            <a href="/admin/licenses?product=${p.slug}">Licenses</a>
                            ${actionForm(
                              context.csrfToken,
                              {
                                action: `/admin/products/${p.slug}/delete`,
                                class: "inline",
                                confirm: `Delete product ${p.name}? Only possible while it has no licenses or releases.`,
                              },
                              { label: "Delete", class: "danger" },
                            )}
                          </td>
                        </tr>`,
                    )}
                  </tbody>
                </table>
              </div>`
        }
        <h2>New product</h2>
        <form method="post" action="/admin/products" class="stack panel">
          ${csrfField(context.csrfToken)}
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
                pattern="[a-z0-9]([a-z0-9-]*[a-z0-9])?"
                value="${text(form, "slug")}"
                ${errors.slug ? html`aria-invalid="true"` : ""}
              />${fieldError(errors, "slug")}</label
            >
          </div>
          <div class="actions"><button type="submit">Create product</button></div>
        </form>`,
      flash,
    );
  };

  app.get<{ Querystring: { done?: string } }>("/admin/products", async (request, reply) =>
    sendPage(reply, await page(contextOf(request), {}, {}, done[request.query.done ?? ""])),
  );

  app.post<{ Body: Form }>("/admin/products", async (request, reply) => {
    try {
      await createProductAudited(
        db,
        adminActor(request),
        {
          slug: text(request.body, "slug"),
          name: text(request.body, "name"),
        },
        signing.masterKey,
      );
      return reply.redirect("/admin/products?done=created", 303);
    } catch (err) {
      const errors =
        err instanceof ShipkeyError && err.code === "PRODUCT_SLUG_TAKEN"
          ? { slug: err.message }
          : errorsFor(err, ["slug", "name"]);
      return sendPage(reply, await page(contextOf(request), request.body, errors), 400);
    }
  });

  app.post<{ Params: { slug: string }; Body: Form }>(
    "/admin/products/:slug/rename",
    async (request, reply) => {
      try {
        await renameProductAudited(
          db,
          adminActor(request),
          request.params.slug,
          text(request.body, "name"),
        );
        return reply.redirect("/admin/products?done=renamed", 303);
      } catch (err) {
        return sendPage(reply, await page(contextOf(request), {}, errorsFor(err, [])), 400);
      }
    },
  );

  app.post<{ Params: { slug: string }; Body: Form }>(
    "/admin/products/:slug/tauri-key",
    async (request, reply) => {
      try {
        await setTauriPublicKeyAudited(
          db,
          adminActor(request),
          request.params.slug,
          text(request.body, "tauriPublicKey"),
        );
        return reply.redirect("/admin/products?done=tauri-key-set", 303);
      } catch (err) {
        return sendPage(reply, await page(contextOf(request), {}, errorsFor(err, [])), 400);
      }
    },
  );

  app.post<{ Params: { slug: string } }>(
    "/admin/products/:slug/tauri-key/clear",
    async (request, reply) => {
      try {
        await setTauriPublicKeyAudited(db, adminActor(request), request.params.slug, null);
        return reply.redirect("/admin/products?done=tauri-key-cleared", 303);
      } catch (err) {
        return sendPage(reply, await page(contextOf(request), {}, errorsFor(err, [])), 404);
      }
    },
  );

  app.post<{ Params: { slug: string } }>("/admin/products/:slug/delete", async (request, reply) => {
    try {
      await deleteProductAudited(db, adminActor(request), request.params.slug);
      return reply.redirect("/admin/products?done=deleted", 303);
    } catch (err) {
      return sendPage(reply, await page(contextOf(request), {}, errorsFor(err, [])), 409);
    }
  });
}

/** The product's Tauri key id (or "not set"), with a form to set it and a button to clear it. */
function tauriKeyCell(product: Product, csrfToken: string) {
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
