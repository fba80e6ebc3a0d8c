import { type ApiKeyView, activeKeysBelow } from "../../../domain/api-keys/api-keys.js";
import type { Product } from "../../../domain/products/products.js";
import { apiKeyScopes } from "../../../contracts/vocabulary.js";
import { type Form, list, text } from "../form-body.js";
import {
  actionForm,
  badge,
  csrfField,
  fieldError,
  formError,
  type Html,
  html,
  layout,
  type PageContext,
  when,
} from "../html.js";
import { secretOf } from "../notice.js";

/** What the API keys page shows: the keys, the products, the new-key form as last sent. */
export interface ApiKeysPage {
  context: PageContext;
  keys: ApiKeyView[];
  products: Product[];
  form: Form;
  errors: Record<string, string>;
}

export function apiKeysView(page: ApiKeysPage): Html {
  const { context, keys } = page;
  const created = secretOf(context.notice);
  return layout(
    "API Keys",
    "api-keys",
    context,
    html`${created ? createdPanel(created) : ""}
      <p class="hint">
        Make one key per pipeline, limited to the product it ships and to the scopes it needs (<code
          >releases:write</code
        >
        to publish): a leaked key then reaches nothing else.
      </p>
      ${keys.length === 0 ? noKeys() : keyTable(keys, context.csrfToken)} ${newKeyForm(page)}`,
  );
}

function noKeys(): Html {
  return html`<div class="empty">
    No API keys yet. Create one for your CI with the <code>releases:write</code> scope.
  </div>`;
}

function keyTable(keys: ApiKeyView[], csrfToken: string): Html {
  const below = activeKeysBelow(keys);
  return html`<div class="table-wrap">
    <table>
      <thead>
        <tr>
          <th>Name</th>
          <th>Key</th>
          <th>Scopes</th>
          <th>Products</th>
          <th>Created</th>
          <th>Created by</th>
          <th>Last used</th>
          <th>Expires</th>
          <th>Status</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        ${keys.map((k) => keyRow(k, below.get(k.id) ?? 0, csrfToken))}
      </tbody>
    </table>
  </div>`;
}

/** `below`: the active keys below it (activeKeysBelow), which the revoke form offers too. */
function keyRow(k: ApiKeyView, below: number, csrfToken: string): Html {
  const expired = k.expiresAt !== null && Date.parse(k.expiresAt) <= Date.now();
  return html`<tr data-key="${k.id}">
    <td>${k.name}</td>
    <td class="mono">${k.displayPrefix}…</td>
    <td>${k.scopes.join(", ")}</td>
    <td>${k.products === null ? html`<em>all</em>` : k.products.join(", ")}</td>
    <td>${when(k.createdAt)}</td>
    <td>${creatorCell(k.createdBy)}</td>
    <td>${when(k.lastUsedAt)}</td>
    <td>${when(k.expiresAt)}</td>
    <td>${k.revokedAt ? badge("REVOKED") : expired ? badge("EXPIRED") : badge("ACTIVE")}</td>
    <td>${revokeForm(k, below, csrfToken)}</td>
  </tr>`;
}

const creatorKinds: Record<NonNullable<ApiKeyView["createdBy"]>["type"], string> = {
  api_key: "API key",
  admin: "admin",
  cli: "CLI",
  service: "server",
};

function creatorCell(creator: ApiKeyView["createdBy"]): Html {
  if (creator === null) return html`<em>unknown</em>`;
  return html`${creator.label} <span class="muted">(${creatorKinds[creator.type]})</span>`;
}

/**
 * Revoke, with a box for the active keys below the key when it has any; a revoked key with
 * active keys below it offers to revoke those.
 */
function revokeForm(k: ApiKeyView, below: number, csrfToken: string): Html | string {
  const action = `/admin/api-keys/${k.id}/revoke`;
  const them = below === 1 ? "1 active key" : `${below} active keys`;
  if (k.revokedAt) {
    if (below === 0) return "";
    return actionForm(
      csrfToken,
      {
        action,
        confirm: `Revoke the ${them} created from ${k.name}? Anything using them stops working at once.`,
        hidden: { withCreated: "on" },
      },
      { label: `Revoke the ${them} created from it`, class: "danger" },
    );
  }
  if (below === 0) {
    return actionForm(
      csrfToken,
      { action, confirm: `Revoke ${k.name}? Anything using it stops working at once.` },
      { label: "Revoke", class: "danger" },
    );
  }
  return html`<form
    method="post"
    action="${action}"
    data-confirm="Revoke ${k.name}? Anything using it stops working at once (and anything using the keys created from it, if ticked)."
  >
    ${csrfField(csrfToken)}
    <label class="check"
      ><input type="checkbox" name="withCreated" /> Also revoke the ${them} created from it
      <span class="muted">(by it, or by keys created from it)</span></label
    >
    <button type="submit" class="danger">Revoke</button>
  </form>`;
}

function newKeyForm({ context, products, form, errors }: ApiKeysPage): Html {
  const chosen = list(form, "scopes");
  const chosenProducts = list(form, "products");
  return html`<h2>New API key</h2>
    <form method="post" action="/admin/api-keys" class="stack panel">
      ${csrfField(context.csrfToken)} ${formError(errors)}
      <label
        >Name
        <input
          name="name"
          required
          value="${text(form, "name")}"
          placeholder="GitHub Actions"
          ${errors.name ? html`aria-invalid="true"` : ""}
        />${fieldError(errors, "name")}</label
      >
      <fieldset>
        <legend>Scopes</legend>
        ${apiKeyScopes.map((s) => html`<label class="check"><input type="checkbox" name="scopes" value="${s}" ${chosen.includes(s) ? html`checked` : ""} /> <code>${s}</code></label>`)}
        ${fieldError(errors, "scopes")}
      </fieldset>
      <fieldset>
        <legend>Products <span class="hint">(none ticked = every product)</span></legend>
        ${products.map((p) => html`<label class="check"><input type="checkbox" name="products" value="${p.slug}" ${chosenProducts.includes(p.slug) ? html`checked` : ""} /> ${p.name} <code>${p.slug}</code></label>`)}
        ${fieldError(errors, "products")}
      </fieldset>
      <label
        >Expires <span class="hint">(UTC, empty = never)</span
        ><input
          type="datetime-local"
          name="expiresAt"
          value="${text(form, "expiresAt")}"
        />${fieldError(errors, "expiresAt")}</label
      >
      <div class="actions"><button type="submit">Create key</button></div>
    </form>`;
}

/** A new key's secret, shown once. */
function createdPanel(created: Record<string, string>): Html {
  return html`<section class="panel" aria-labelledby="new-key-title">
    <h2 id="new-key-title">Key “${created.name ?? ""}” created</h2>
    <p>Copy it now: this is the only time it is shown. Only its hash is stored.</p>
    <div class="secret">
      <code id="new-secret">${created.key ?? ""}</code
      ><button type="button" class="secondary" data-copy="new-secret">Copy</button>
    </div>
  </section>`;
}
