import type { Product } from "../../../domain/products/products.js";
import type { SigningKeyView } from "../../../domain/signing/signing-keys.js";
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

/** What the signing keys page shows: the product, its keys, the refusal of the last change. */
export interface KeysPage {
  context: PageContext;
  product: Product;
  keys: SigningKeyView[];
  errors: Record<string, string>;
}

export const keysPath = (slug: string) => `/admin/products/${encodeURIComponent(slug)}/keys`;

export function keysView(page: KeysPage): Html {
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

/** Seconds as days for the form: at most six decimals, enough to give back the same second. */
function daysOf(seconds: number): string {
  return String(Number((seconds / 86_400).toFixed(6)));
}
