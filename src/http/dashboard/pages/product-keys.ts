import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import {
  prepareSigningKey,
  promoteSigningKey,
  removeSigningKey,
  setDeactivationLimit,
  setMachineLease,
  setOfflineAllowance,
  setOfflinePeriod,
} from "../../../actions/products.js";
import { offlinePeriod } from "../../../contracts/vocabulary.js";
import { type Product, requireProduct } from "../../../domain/products/products.js";
import { ShipkeyError } from "../../../errors.js";
import { listProductKeys, type SigningKeyView } from "../../../domain/signing/signing-keys.js";
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
  "machine-lease": "Machine lease saved.",
};

/** What the signing keys page shows: the product, its keys, the refusal of the last change. */
interface KeysPage {
  context: PageContext;
  product: Product;
  keys: SigningKeyView[];
  errors: Record<string, string>;
  flash?: string;
}

type KeysRequest = FastifyRequest<{ Params: { slug: string; kid?: string }; Body: Form }>;

const keysPath = (slug: string) => `/admin/products/${encodeURIComponent(slug)}/keys`;

/**
 * A product's signing keys: the key set (JWKS) to paste into an app, the current public key as
 * JWK and PEM, the two steps of a rotation (prepare a next key, promote it), the retired keys
 * still published; and its offline settings: the period of certificates, the offline allowance
 * and the churn limit. The private key is never shown.
 */
export function productKeyPages(app: FastifyInstance, db: Kysely<DB>, signing: Signing): void {
  const render = (
    request: FastifyRequest<{ Params: { slug: string } }>,
    reply: FastifyReply,
    view: Pick<KeysPage, "errors" | "flash">,
    status = 200,
  ) => sendKeysPage(db, signing, request, reply, view, status);
  /** A POST: make the change and go back to the page, or show the page with the refusal. */
  const change = (
    route: string,
    refused: { status: number; fields: string[] },
    act: (request: KeysRequest) => Promise<string>,
  ) =>
    app.post<{ Params: { slug: string; kid?: string }; Body: Form }>(
      `/admin/products/:slug/keys${route}`,
      async (request, reply) => {
        try {
          const to = await act(request);
          return reply.redirect(`${keysPath(request.params.slug)}?done=${to}`, 303);
        } catch (err) {
          const errors = errorsFor(err, refused.fields);
          return render(request, reply, { errors }, refused.status);
        }
      },
    );
  /** A step of a rotation: refused as a conflict, shown above the page. */
  const keyChange = (route: string, act: (request: KeysRequest) => Promise<string>) =>
    change(route, { status: 409, fields: [] }, act);
  /** An offline setting: refused as a bad value, shown beside its field. */
  const setting = (route: string, field: string, act: (request: KeysRequest) => Promise<string>) =>
    change(route, { status: 400, fields: [field] }, act);

  app.get<{ Params: { slug: string }; Querystring: { done?: string } }>(
    "/admin/products/:slug/keys",
    async (request, reply) =>
      render(request, reply, { errors: {}, flash: done[request.query.done ?? ""] }),
  );

  keyChange("/prepare", async (request) => {
    const { slug } = request.params;
    await prepareSigningKey(db, adminActor(request), signing.masterKey, slug);
    return "prepared";
  });
  keyChange("/promote", async (request) => {
    const force = request.body.force === "true";
    await promoteSigningKey(db, adminActor(request), request.params.slug, { force });
    return "promoted";
  });
  keyChange("/:kid/remove", async (request) => {
    const { slug, kid = "" } = request.params;
    await removeSigningKey(db, adminActor(request), slug, kid);
    return "removed";
  });
  setting("/offline-period", "offlinePeriodDays", async (request) => {
    const seconds = offlinePeriodFrom(request.body);
    await setOfflinePeriod(db, adminActor(request), request.params.slug, seconds);
    return "period";
  });
  setting("/offline-allowance", "offlineAllowance", async (request) => {
    const machines = integerFrom(request.body, "offlineAllowance");
    await setOfflineAllowance(db, adminActor(request), request.params.slug, machines);
    return "allowance";
  });
  setting("/deactivation-limit", "maxDeactivationsPer30Days", async (request) => {
    const limit = deactivationLimitFrom(request.body);
    await setDeactivationLimit(db, adminActor(request), request.params.slug, limit);
    return "deactivation-limit";
  });
  setting("/machine-lease", "machineLeaseDays", async (request) => {
    const days = machineLeaseFrom(request.body);
    await setMachineLease(db, adminActor(request), request.params.slug, days);
    return "machine-lease";
  });
}

/** The keys page of the request's product, with a refusal beside its field or a notice. */
async function sendKeysPage(
  db: Kysely<DB>,
  signing: Signing,
  request: FastifyRequest<{ Params: { slug: string } }>,
  reply: FastifyReply,
  view: Pick<KeysPage, "errors" | "flash">,
  status: number,
): Promise<FastifyReply> {
  const { slug } = request.params;
  const product = await requireProduct(db, slug);
  await signing.ring.keyFor(slug); // a product without a key gets its first one
  const keys = await listProductKeys(db, slug);
  return sendPage(reply, keysView({ ...view, context: contextOf(request), product, keys }), status);
}

/**
 * The offline period as typed, in days (fractions allowed: 0.5 is 12 hours; a decimal comma too,
 * which a phone's decimal keypad types in many locales), as the seconds it is stored in, rounded
 * to the second. The admin API and the CLI take seconds.
 */
export function offlinePeriodFrom(form: Form): number {
  const typed = text(form, "offlinePeriodDays").replace(",", ".");
  const seconds = /^\d{1,3}(\.\d{1,6})?$/.test(typed) ? Math.round(Number(typed) * 86_400) : NaN;
  if (!(seconds >= offlinePeriod.minSeconds && seconds <= offlinePeriod.maxSeconds)) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      "The offline period must be a number of days from 0.000694 (one minute) to 90",
      { field: "offlinePeriodDays" },
    );
  }
  return seconds;
}

/** Seconds as days for the form: at most six decimals, enough to give back the same second. */
export function daysOf(seconds: number): string {
  return String(Number((seconds / 86_400).toFixed(6)));
}

/** The machine lease as typed: "" is none. */
function machineLeaseFrom(form: Form): number | null {
  return text(form, "machineLeaseDays") === "" ? null : integerFrom(form, "machineLeaseDays");
}

/** The churn limit as typed: "" is no limit. */
function deactivationLimitFrom(form: Form): number | null {
  return text(form, "maxDeactivationsPer30Days") === ""
    ? null
    : integerFrom(form, "maxDeactivationsPer30Days");
}

function keysView(page: KeysPage): Html {
  const { context, product, keys, errors } = page;
  const { csrfToken } = context;
  const current = keys.find((key) => key.status === "current");
  const next = keys.find((key) => key.status === "next");
  return layout(
    `Signing keys and offline use of ${product.name}`,
    "products",
    context,
    html`${formError(errors)} ${keySet(product, keys)} ${current ? currentKey(current) : noKeyYet()}
    ${rotation(csrfToken, product, next)} ${retiredKeys(csrfToken, product, keys)}
    ${offlinePeriodForm(csrfToken, product, errors)}
    ${offlineAllowanceForm(csrfToken, product, errors)}
    ${deactivationLimitForm(csrfToken, product, errors)}
    ${machineLeaseForm(csrfToken, product, errors)}`,
    page.flash,
  );
}

function keySet(product: Product, keys: SigningKeyView[]): Html {
  const jwks = JSON.stringify({ keys: keys.map((key) => key.jwk) });
  return html`<section class="panel" aria-labelledby="key-set">
    <h2 id="key-set">Key set for your app</h2>
    <p>
      Paste this into your app as the SDK's <code>publicKeys</code> (the same as
      <code>/api/products/${product.slug}/keys</code>). Apps learn later keys by themselves, on the
      word of a key they already trust.
    </p>
    <div class="secret">
      <code id="jwks">${jwks}</code
      ><button type="button" class="secondary" data-copy="jwks">Copy</button>
    </div>
  </section>`;
}

function currentKey(current: SigningKeyView): Html {
  return html`<section class="panel" aria-labelledby="current-key">
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
  </section>`;
}

function noKeyYet(): Html {
  return html`<p>No key yet: one is made at the product's first signed answer.</p>`;
}

function rotation(csrfToken: string, product: Product, next: SigningKeyView | undefined): Html {
  return html`<section class="panel" aria-labelledby="rotation">
    <h2 id="rotation">Rotation</h2>
    ${next ? nextKeyActions(csrfToken, product, next) : prepareAction(csrfToken, product)}
  </section>`;
}

/** A next key: when it may be promoted, and the buttons to promote or remove it. */
function nextKeyActions(csrfToken: string, product: Product, next: SigningKeyView): Html {
  const readyAt = new Date(Date.parse(next.createdAt) + product.offlinePeriodSeconds * 1000);
  return html`<p>
      Next key <span class="mono">${next.kid}</span>, prepared ${when(next.createdAt)}: published
      and announced on signed answers, signing nothing yet. Promote it from
      ${when(readyAt.toISOString())}, once apps that were offline have had the offline period to
      learn it.
    </p>
    <div class="actions">
      ${actionForm(
        csrfToken,
        {
          action: `${keysPath(product.slug)}/promote`,
          class: "inline",
          confirm: `Sign with key ${next.kid} from now on?`,
        },
        { label: "Promote" },
      )}
      ${actionForm(
        csrfToken,
        {
          action: `${keysPath(product.slug)}/promote`,
          class: "inline",
          confirm: `Promote key ${next.kid} before the offline period has passed? Apps that have not been online since it was prepared stop verifying answers until they are.`,
          hidden: { force: "true" },
        },
        { label: "Promote now", class: "danger" },
      )}
      ${removeForm(csrfToken, product, next)}
    </div>`;
}

function prepareAction(csrfToken: string, product: Product): Html {
  return html`<p>
      Step one makes a next key, endorsed by the current one; apps learn it from their next signed
      answer. Step two, after the product's offline period, makes it current. No app needs an
      update.
    </p>
    ${actionForm(
      csrfToken,
      {
        action: `${keysPath(product.slug)}/prepare`,
        class: "actions",
        confirm: `Prepare a next signing key for ${product.name}?`,
      },
      { label: "Prepare next key" },
    )}`;
}

function removeForm(csrfToken: string, product: Product, key: SigningKeyView): Html {
  return actionForm(
    csrfToken,
    {
      action: `${keysPath(product.slug)}/${key.kid}/remove`,
      class: "inline",
      confirm: `Remove key ${key.kid}? Answers and certificates it signed no longer verify for apps that read the JWKS.`,
    },
    { label: "Remove", class: "danger" },
  );
}

function retiredKeys(csrfToken: string, product: Product, keys: SigningKeyView[]): Html {
  const retired = keys.filter((key) => key.status === "retired");
  return html`<h2>Retired keys</h2>
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
                      <td class="actions">${removeForm(csrfToken, product, key)}</td>
                    </tr>`,
                )}
              </tbody>
            </table>
          </div>`
    }`;
}

function offlinePeriodForm(
  csrfToken: string,
  product: Product,
  errors: Record<string, string>,
): Html {
  return html`<h2>Offline period</h2>
    <form method="post" action="${keysPath(product.slug)}/offline-period" class="stack panel">
      ${csrfField(csrfToken)}
      <label
        >License certificates last (days; at most 90, fractions allowed: 0.5 is 12 hours)
        <input
          name="offlinePeriodDays"
          inputmode="decimal"
          required
          value="${daysOf(product.offlinePeriodSeconds)}"
          ${errors.offlinePeriodDays ? html`aria-invalid="true"` : ""}
        />${fieldError(errors, "offlinePeriodDays")}</label
      >
      <p class="hint offline-seconds">
        Now ${daysOf(product.offlinePeriodSeconds)} days: ${product.offlinePeriodSeconds} seconds,
        the unit of the admin API's <code>offlinePeriodSeconds</code> and the CLI.
      </p>
      <p class="hint">
        A certificate already issued cannot be recalled: suspending or revoking a license takes
        effect offline only when its certificate expires.
      </p>
      <div class="actions"><button type="submit">Save</button></div>
    </form>`;
}

function offlineAllowanceForm(
  csrfToken: string,
  product: Product,
  errors: Record<string, string>,
): Html {
  return html`<h2>Offline allowance</h2>
    <form method="post" action="${keysPath(product.slug)}/offline-allowance" class="stack panel">
      ${csrfField(csrfToken)}
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
        A deactivated machine's certificate counts until it expires, so deactivating and activating
        again cannot multiply a seat. Checkout beyond the allowance is refused.
      </p>
      <div class="actions"><button type="submit">Save</button></div>
    </form>`;
}

function deactivationLimitForm(
  csrfToken: string,
  product: Product,
  errors: Record<string, string>,
): Html {
  const limit = product.maxDeactivationsPer30Days;
  return html`<h2>Deactivation limit</h2>
    <form method="post" action="${keysPath(product.slug)}/deactivation-limit" class="stack panel">
      ${csrfField(csrfToken)}
      <label
        >Deactivations by the app per license in 30 days (empty = no limit)
        <input
          name="maxDeactivationsPer30Days"
          inputmode="numeric"
          value="${limit === null ? "" : String(limit)}"
        />${fieldError(errors, "maxDeactivationsPer30Days")}</label
      >
      <p class="hint">
        Recommended where apps use certificates: it bounds how often a seat can move between
        machines. Deactivations from this dashboard, the CLI or the admin API are never limited and
        do not count. A license may set its own limit.
      </p>
      <div class="actions"><button type="submit">Save</button></div>
    </form>`;
}

function machineLeaseForm(
  csrfToken: string,
  product: Product,
  errors: Record<string, string>,
): Html {
  const days = product.machineLeaseDays;
  return html`<h2>Machine lease</h2>
    <form method="post" action="${keysPath(product.slug)}/machine-lease" class="stack panel">
      ${csrfField(csrfToken)}
      <label
        >Days a machine keeps its slot without being seen (empty = for ever)
        <input
          name="machineLeaseDays"
          inputmode="numeric"
          value="${days === null ? "" : String(days)}"
        />${fieldError(errors, "machineLeaseDays")}</label
      >
      <p class="hint">
        Activate, validate and checkout count as seen, and so does an unexpired certificate until it
        expires. A machine unseen for longer is deactivated by the server, and can activate again.
        Suits customers who reinstall or replace computers without deactivating.
      </p>
      <div class="actions"><button type="submit">Save</button></div>
    </form>`;
}
