import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import {
  removeSigningKeyAudited,
  rotateSigningKeyAudited,
  setDeactivationLimitAudited,
  setOfflineAllowanceAudited,
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
import {
  adminActor,
  contextOf,
  errorsFor,
  type Form,
  integerFrom,
  sendPage,
  text,
} from "../page-kit.js";

const done: Record<string, string> = {
  rotated: "New signing key made. Running servers use it within 30 seconds.",
  removed: "Retired key removed.",
  period: "Offline period saved.",
  allowance: "Offline allowance saved.",
  "deactivation-limit": "Deactivation limit saved.",
};

/**
 * A product's signing keys: the current public key as JWK and PEM to paste into an app, the
 * rotate button, the retired keys still published; and its offline settings: the period of
 * certificates, the offline allowance and the churn limit. The private key is never shown.
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
      `Signing keys and offline use of ${product.name}`,
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
        </form>
        <h2>Offline allowance</h2>
        <form method="post" action="${keysPath(slug)}/offline-allowance" class="stack panel">
          ${csrfField(context.csrfToken)}
          <label
            >Machines beyond a license's slots that may hold an unexpired certificate (0 to 100)
            <input
              name="offlineAllowance"
              inputmode="numeric"
              required
              value="${String(product.offlineAllowance)}"
            />${fieldError(errors, "offlineAllowance")}</label
          >
          <p class="hint">
            A deactivated machine's certificate counts until it expires, so deactivating and
            activating again cannot multiply a seat. Checkout beyond the allowance is refused.
          </p>
          <div class="actions"><button type="submit">Save</button></div>
        </form>
        <h2>Deactivation limit</h2>
        <form method="post" action="${keysPath(slug)}/deactivation-limit" class="stack panel">
          ${csrfField(context.csrfToken)}
          <label
            >Deactivations by the app per license in 30 days (empty = no limit)
            <input
              name="maxDeactivationsPer30Days"
              inputmode="numeric"
              value="${product.maxDeactivationsPer30Days === null ? "" : String(product.maxDeactivationsPer30Days)}"
            />${fieldError(errors, "maxDeactivationsPer30Days")}</label
          >
          <p class="hint">
            Recommended where apps use certificates: it bounds how often a seat can move between
            machines. Deactivations from this dashboard, the CLI or the admin API are never limited
            and do not count. A license may set its own limit.
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

  app.post<{ Params: { slug: string }; Body: Form }>(
    "/admin/products/:slug/keys/offline-allowance",
    async (request, reply) => {
      const { slug } = request.params;
      try {
        const machines = integerFrom(request.body, "offlineAllowance");
        await setOfflineAllowanceAudited(db, adminActor(request), slug, machines);
        return reply.redirect(`${keysPath(slug)}?done=allowance`, 303);
      } catch (err) {
        const errors = errorsFor(err, ["offlineAllowance"]);
        return sendPage(reply, await page(contextOf(request), slug, errors), 400);
      }
    },
  );

  app.post<{ Params: { slug: string }; Body: Form }>(
    "/admin/products/:slug/keys/deactivation-limit",
    async (request, reply) => {
      const { slug } = request.params;
      try {
        const limit =
          text(request.body, "maxDeactivationsPer30Days") === ""
            ? null
            : integerFrom(request.body, "maxDeactivationsPer30Days");
        await setDeactivationLimitAudited(db, adminActor(request), slug, limit);
        return reply.redirect(`${keysPath(slug)}?done=deactivation-limit`, 303);
      } catch (err) {
        const errors = errorsFor(err, ["maxDeactivationsPer30Days"]);
        return sendPage(reply, await page(contextOf(request), slug, errors), 400);
      }
    },
  );
}
