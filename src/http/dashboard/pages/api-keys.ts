import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import {
  activeKeysBelow,
  type ApiKeyView,
  listApiKeys,
  newApiKeyErrors,
} from "../../../domain/api-keys/api-keys.js";
import { createApiKey, revokeApiKey } from "../../../actions/api-keys.js";
import { listProducts, type Product } from "../../../domain/products/products.js";
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
import {
  adminActor,
  contextOf,
  errorsFor,
  expiryFrom,
  type Form,
  FormCheck,
  list,
  sendPage,
  text,
} from "../page-kit.js";
import { setFlash, takeFlash } from "../flash.js";
import { apiKeyScopes } from "../../../contracts/vocabulary.js";

const path = "/admin/api-keys";

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

/** What the API keys page shows: the keys, the products, the new-key form as last sent. */
interface ApiKeysPage {
  context: PageContext;
  keys: ApiKeyView[];
  products: Product[];
  form: Form;
  errors: Record<string, string>;
  created?: Html;
  flash?: string;
}

const apiKeyFields = ["name", "scopes", "expiresAt", "products"];

export function apiKeyPages(app: FastifyInstance, db: Kysely<DB>): void {
  const render = async (
    request: FastifyRequest,
    reply: FastifyReply,
    view: Omit<ApiKeysPage, "context" | "keys" | "products">,
    status = 200,
  ) => {
    const keys = await listApiKeys(db);
    const products = await listProducts(db);
    return sendPage(
      reply,
      apiKeysView({ ...view, context: contextOf(request), keys, products }),
      status,
    );
  };

  app.get<{ Querystring: { done?: string; also?: string } }>(path, async (request, reply) => {
    const created = takeFlash(request, reply, path);
    return render(request, reply, {
      form: {},
      errors: {},
      created: created ? createdPanel(created) : undefined,
      flash: request.query.done === "revoked" ? revokedFlash(request.query.also) : undefined,
    });
  });

  app.post<{ Body: Form }>(path, async (request, reply) => {
    const form = request.body;
    try {
      const key = await createApiKey(db, adminActor(request), newKeyFrom(form));
      // The secret goes to the next page once, in a sealed cookie: a reload neither creates a
      // second key nor shows this one again.
      setFlash(request, reply, path, { name: key.name, key: key.key });
      return reply.redirect(path, 303);
    } catch (err) {
      return render(request, reply, { form, errors: errorsFor(err, apiKeyFields) }, 400);
    }
  });

  // The withCreated box: the active keys created from it too.
  app.post<{ Params: { id: string }; Body: Form }>(
    "/admin/api-keys/:id/revoke",
    async (request, reply) => {
      const withCreated = text(request.body, "withCreated") !== "";
      const { id } = request.params;
      const { alsoRevoked } = await revokeApiKey(db, adminActor(request), id, {
        withCreated,
      });
      const also = alsoRevoked.length === 0 ? "" : `&also=${alsoRevoked.length}`;
      return reply.redirect(`/admin/api-keys?done=revoked${also}`, 303);
    },
  );
}

/** "API key revoked.", and how many keys created from it went with it (`also`, a count). */
function revokedFlash(also: string | undefined): string {
  const count = also !== undefined && /^[1-9][0-9]{0,5}$/.test(also) ? Number(also) : 0;
  if (count === 0) return "API key revoked.";
  return `API key revoked, with the ${keysCount(count)} created from it.`;
}

const keysCount = (n: number) => (n === 1 ? "1 key" : `${n} keys`);

/** The new key as the form gives it; every invalid field refused at once. */
function newKeyFrom(form: Form) {
  const check = new FormCheck();
  const key = {
    name: text(form, "name"),
    scopes: list(form, "scopes"),
    expiresAt: check.field(() => expiryFrom(form, "expiresAt"), null),
    // No product ticked: a key for every product.
    products: list(form, "products").length === 0 ? null : list(form, "products"),
  };
  check.add(newApiKeyErrors(key));
  check.done();
  return key;
}

function apiKeysView(page: ApiKeysPage): Html {
  const { context, keys } = page;
  return layout(
    "API Keys",
    "api-keys",
    context,
    html`${page.created ?? ""}
      <p class="hint">
        Make one key per pipeline, limited to the product it ships and to the scopes it needs (<code
          >releases:write</code
        >
        to publish): a leaked key then reaches nothing else.
      </p>
      ${keys.length === 0 ? noKeys() : keyTable(keys, context.csrfToken)} ${newKeyForm(page)}`,
    page.flash,
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
