import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import * as actions from "../../../actions/products.js";
import { createProduct, updateProduct } from "../../../contracts/products.js";
import { listLicenses } from "../../../domain/licenses/list-licenses.js";
import { listProducts, newProductErrors } from "../../../domain/products/products.js";
import type { Signing } from "../../../domain/signing/key-ring.js";
import { type Form, formBody, formFailure } from "../form-body.js";
import { adminActor, contextOf, redirectDone, sendPage } from "../page-kit.js";
import { productsView, type ProductsPage } from "../views/products.js";

type ProductRequest = FastifyRequest<{ Params: { slug: string }; Body: Form }>;

const path = "/admin/products";
const productFields = ["slug", "name"];

/**
 * The products page: the list, and the forms that create a product, rename it, set or clear its
 * Tauri key and delete it. Each form is read as the admin API's body of the same write.
 */
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
  /** A POST: make the change and go back to the list, or show the list with the refusal. */
  const change = (
    route: string,
    act: (request: ProductRequest) => Promise<string>,
    fields: string[] = [],
  ) =>
    app.post<{ Params: { slug: string }; Body: Form }>(route, async (request, reply) => {
      try {
        return redirectDone(request, reply, path, await act(request));
      } catch (err) {
        const { status, errors } = formFailure(err, fields);
        const form = fields.length > 0 ? request.body : {};
        return render(request, reply, { form, errors }, status);
      }
    });
  const update = (request: ProductRequest, changes: Parameters<typeof actions.updateProduct>[3]) =>
    actions.updateProduct(db, adminActor(request), request.params.slug, changes);

  app.get(path, async (request, reply) => render(request, reply, { form: {}, errors: {} }));

  change(
    path,
    async (request) => {
      const input = await formBody(createProduct.schema.body, request.body, {
        checks: newProductErrors,
      });
      await actions.createProduct(db, adminActor(request), input, signing.masterKey);
      return "Product created.";
    },
    productFields,
  );
  change(`${path}/:slug/rename`, async (request) => {
    await update(request, await formBody(updateProduct.schema.body, request.body, renaming));
    return "Product renamed.";
  });
  change(`${path}/:slug/tauri-key`, async (request) => {
    const body = await formBody(updateProduct.schema.body, request.body, settingTauriKey);
    // This form sets a key: empty is refused as the domain refuses it (the clear button clears).
    await update(request, { tauriPublicKey: body.tauriPublicKey ?? "" });
    return "Tauri public key set: publish now refuses signatures not made by it.";
  });
  change(`${path}/:slug/tauri-key/clear`, async (request) => {
    await update(request, { tauriPublicKey: null });
    return "Tauri public key cleared: publish no longer checks signatures.";
  });
  app.post<{ Params: { slug: string } }>(`${path}/:slug/delete`, async (request, reply) => {
    const { slug } = request.params;
    try {
      await actions.deleteProduct(db, adminActor(request), slug);
      return redirectDone(request, reply, path, "Product deleted.");
    } catch (err) {
      const { status, errors } = formFailure(err, []);
      if (await hasLicenses(db, slug)) errors._licensesOf = slug;
      return render(request, reply, { form: {}, errors }, status);
    }
  });
}

const renaming = { fields: ["name"] } as const;
const settingTauriKey = { fields: ["tauriPublicKey"] } as const;

/** Whether the product has a license (the refused delete links to them). */
async function hasLicenses(db: Kysely<DB>, slug: string): Promise<boolean> {
  const page = await listLicenses(db, { product: slug, limit: 1 });
  return page.items.length > 0;
}
