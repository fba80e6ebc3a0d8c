import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import {
  removeSigningKeyAudited,
  rotateSigningKeyAudited,
  setOfflinePeriodAudited,
} from "../../../domain/audit/audited-actions.js";
import { type Product, requireProduct } from "../../../domain/products/products.js";
import { listProductKeys, type SigningKeyView } from "../../../domain/signing/signing-keys.js";
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
import { adminActor, contextOf, errorsFor, type Form, integerFrom, sendPage } from "../page-kit.js";

const done: Record<string, string> = {
  rotated: "New signing key made. Running servers use it within 30 seconds.",
  removed: "Retired key removed.",
  period: "Offline period saved.",
};

/**
 * A product's signing keys: the current public key as JWK and PEM to paste into an app, the
 * rotate button, the retired keys still published, and the offline period of certificates. The
 * private key is never shown.
 */
export function productKeyPages(app: FastifyInstance, db: Kysely<DB>, signing: Signing): void {
  const keysPath = (slug: string) => `/admin/products/${encodeURIComponent(slug)}/keys`;

  const view = (context: PageContext, product: Product, keys: SigningKeyView[]) => {
    const [current, ...retired] = keys;
    return html`${
        current
          ? html`<section class="panel" aria-labelledby="current-key">
              <h2 id="current-key">Current key <span class="mono">${current.kid}</span></h2>
              <p>
                Pin it in your app, or fetch <code>/api/products/${product.slug}/keys</code>. Made
                ${when(current.createdAt)}.
              </p>
              <h3>JWK</h3>
              <div class="secret">
                <code id="current-jwk">${JSON.stringify(current.jwk)}</code
                ><button type="button" class="secondary" data-copy="current-jwk">Copy</button>
              </div>
              <h3>PEM</h3>
              <div class="secret">
                <pre id="current-pem">${current.pem}</pre>
                <button type="button" class="secondary" data-copy="current-pem">Copy</button>
              </div>
              ${actionForm(
                context.csrfToken,
                {
                  action: `${keysPath(product.slug)}/rotate`,
                  class: "actions",
                  confirm: `Make a new signing key for ${product.name}? Apps that pin only this key must also get the new one.`,
                },
                { label: "Rotate key" },
              )}
            </section>`
          : html`<p>No key yet: one is made at the product's first signed answer.</p>`
      }
      <h2>Retired keys</h2>
      ${
        retired.length === 0
          ? html`<p>None.</p>`
          : html`<div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th>Key id</th>
                    <th>Made</th>
                    <th>Retired</th>
                    <th></th>
                  </tr>
                </thead>
                <tbody>
                  ${retired.map(
                    (key) =>
                      html`<tr>
                        <td class="mono">${key.kid}</td>
                        <td>${when(key.createdAt)}</td>
                        <td>${when(key.retiredAt)}</td>
                        <td class="actions">
                          ${actionForm(
                            context.csrfToken,
                            {
                              action: `${keysPath(product.slug)}/${key.kid}/remove`,
                              class: "inline",
                              confirm: `Remove key ${key.kid}? Answers and certificates it signed no longer verify for apps that read the JWKS.`,
                            },
                            { label: "Remove", class: "danger" },
                          )}
                        </td>
                      </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
      }`;
  };

  const page = async (
    context: PageContext,
    slug: string,
    errors: Record<string, string> = {},
    flash?: string,
  ) => {
    const product = await requireProduct(db, slug);
    await signing.ring.keyFor(slug); // a product without a key gets its first one
    const keys = await listProductKeys(db, slug);
    return layout(
      `Signing keys of ${product.name}`,
      "products",
      context,
      html`${errors._form ? html`<p class="alert" role="alert">${errors._form}</p>` : ""}
        ${view(context, product, keys)}
        <h2>Offline period</h2>
        <form method="post" action="${keysPath(slug)}/offline-period" class="stack panel">
          ${csrfField(context.csrfToken)}
          <label
            >License certificates last (seconds; at most 7776000, 90 days)
            <input
              name="offlinePeriodSeconds"
              inputmode="numeric"
              required
              value="${String(product.offlinePeriodSeconds)}"
            />${fieldError(errors, "offlinePeriodSeconds")}</label
          >
          <p class="hint">
            A certificate already issued cannot be recalled: suspending or revoking a license takes
            effect offline only when its certificate expires.
          </p>
          <div class="actions"><button type="submit">Save</button></div>
        </form>`,
      flash,
    );
  };

  app.get<{ Params: { slug: string }; Querystring: { done?: string } }>(
    "/admin/products/:slug/keys",
    async (request, reply) =>
      sendPage(
        reply,
        await page(contextOf(request), request.params.slug, {}, done[request.query.done ?? ""]),
      ),
  );

  app.post<{ Params: { slug: string } }>(
    "/admin/products/:slug/keys/rotate",
    async (request, reply) => {
      const { slug } = request.params;
      await rotateSigningKeyAudited(db, adminActor(request), signing.masterKey, slug);
      signing.ring.forget(slug);
      return reply.redirect(`${keysPath(slug)}?done=rotated`, 303);
    },
  );

  app.post<{ Params: { slug: string; kid: string } }>(
    "/admin/products/:slug/keys/:kid/remove",
    async (request, reply) => {
      const { slug, kid } = request.params;
      try {
        await removeSigningKeyAudited(db, adminActor(request), slug, kid);
        return reply.redirect(`${keysPath(slug)}?done=removed`, 303);
      } catch (err) {
        return sendPage(reply, await page(contextOf(request), slug, errorsFor(err, [])), 409);
      }
    },
  );

  app.post<{ Params: { slug: string }; Body: Form }>(
    "/admin/products/:slug/keys/offline-period",
    async (request, reply) => {
      const { slug } = request.params;
      try {
        const seconds = integerFrom(request.body, "offlinePeriodSeconds");
        await setOfflinePeriodAudited(db, adminActor(request), slug, seconds);
        return reply.redirect(`${keysPath(slug)}?done=period`, 303);
      } catch (err) {
        const errors = errorsFor(err, ["offlinePeriodSeconds"]);
        return sendPage(reply, await page(contextOf(request), slug, errors), 400);
      }
    },
  );
}
