import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import {
  prepareSigningKeyAudited,
  promoteSigningKeyAudited,
  removeSigningKeyAudited,
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
  prepared:
    "Next key made. Apps learn it from their next signed answer; promote it after the offline period.",
  promoted: "Next key promoted. Running servers sign with it within 30 seconds.",
  removed: "Key removed.",
  period: "Offline period saved.",
  allowance: "Offline allowance saved.",
  "deactivation-limit": "Deactivation limit saved.",
};

/**
 * A product's signing keys: the key set (JWKS) to paste into an app, the current public key as
 * JWK and PEM, the two steps of a rotation (prepare a next key, promote it), the retired keys
 * still published; and its offline settings: the period of certificates, the offline allowance
 * and the churn limit. The private key is never shown.
 */
export function productKeyPages(app: FastifyInstance, db: Kysely<DB>, signing: Signing): void {
  const keysPath = (slug: string) => `/admin/products/${encodeURIComponent(slug)}/keys`;

  const view = (context: PageContext, product: Product, keys: SigningKeyView[]) => {
    const current = keys.find((key) => key.status === "current");
    const next = keys.find((key) => key.status === "next");
    const retired = keys.filter((key) => key.status === "retired");
    const jwks = JSON.stringify({ keys: keys.map((key) => key.jwk) });
    const readyAt = next
      ? new Date(Date.parse(next.createdAt) + product.offlinePeriodSeconds * 1000)
      : null;
    const removeForm = (key: SigningKeyView) =>
      actionForm(
        context.csrfToken,
        {
          action: `${keysPath(product.slug)}/${key.kid}/remove`,
          class: "inline",
          confirm: `Remove key ${key.kid}? Answers and certificates it signed no longer verify for apps that read the JWKS.`,
        },
        { label: "Remove", class: "danger" },
      );
    return html`<section class="panel" aria-labelledby="key-set">
        <h2 id="key-set">Key set for your app</h2>
        <p>
          Paste this into your app as the SDK's <code>publicKeys</code> (the same as
          <code>/api/products/${product.slug}/keys</code>). Apps learn later keys by themselves, on
          the word of a key they already trust.
        </p>
        <div class="secret">
          <code id="jwks">${jwks}</code
          ><button type="button" class="secondary" data-copy="jwks">Copy</button>
        </div>
      </section>
      ${
        current
          ? html`<section class="panel" aria-labelledby="current-key">
              <h2 id="current-key">Current key <span class="mono">${current.kid}</span></h2>
              <p>Signs every answer and certificate. Made ${when(current.createdAt)}.</p>
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
            </section>`
          : html`<p>No key yet: one is made at the product's first signed answer.</p>`
      }
      <section class="panel" aria-labelledby="rotation">
        <h2 id="rotation">Rotation</h2>
        ${
          next && readyAt
            ? html`<p>
                  Next key <span class="mono">${next.kid}</span>, prepared ${when(next.createdAt)}:
                  published and announced on signed answers, signing nothing yet. Promote it from
                  ${when(readyAt.toISOString())}, once apps that were offline have had the offline
                  period to learn it.
                </p>
                <div class="actions">
                  ${actionForm(
                    context.csrfToken,
                    {
                      action: `${keysPath(product.slug)}/promote`,
                      class: "inline",
                      confirm: `Sign with key ${next.kid} from now on?`,
                    },
                    { label: "Promote" },
                  )}
                  ${actionForm(
                    context.csrfToken,
                    {
                      action: `${keysPath(product.slug)}/promote`,
                      class: "inline",
                      confirm: `Promote key ${next.kid} before the offline period has passed? Apps that have not been online since it was prepared stop verifying answers until they are.`,
                      hidden: { force: "true" },
                    },
                    { label: "Promote now", class: "danger" },
                  )}
                  ${removeForm(next)}
                </div>`
            : html`<p>
                  Step one makes a next key, endorsed by the current one; apps learn it from their
                  next signed answer. Step two, after the product's offline period, makes it
                  current. No app needs an update.
                </p>
                ${actionForm(
                  context.csrfToken,
                  {
                    action: `${keysPath(product.slug)}/prepare`,
                    class: "actions",
                    confirm: `Prepare a next signing key for ${product.name}?`,
                  },
                  { label: "Prepare next key" },
                )}`
        }
      </section>
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
                        <td class="actions">${removeForm(key)}</td>
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
    "/admin/products/:slug/keys/prepare",
    async (request, reply) => {
      const { slug } = request.params;
      try {
        await prepareSigningKeyAudited(db, adminActor(request), signing.masterKey, slug);
      } catch (err) {
        return sendPage(reply, await page(contextOf(request), slug, errorsFor(err, [])), 409);
      }
      return reply.redirect(`${keysPath(slug)}?done=prepared`, 303);
    },
  );

  app.post<{ Params: { slug: string }; Body: Form }>(
    "/admin/products/:slug/keys/promote",
    async (request, reply) => {
      const { slug } = request.params;
      try {
        await promoteSigningKeyAudited(db, adminActor(request), slug, {
          force: request.body.force === "true",
        });
      } catch (err) {
        return sendPage(reply, await page(contextOf(request), slug, errorsFor(err, [])), 409);
      }
      return reply.redirect(`${keysPath(slug)}?done=promoted`, 303);
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
