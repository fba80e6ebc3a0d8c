import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  redeliverWebhook,
  rotateWebhookSecret,
  sendWebhookTest,
  updateWebhookEndpoint,
} from "../../../actions/webhooks.js";
import { getWebhookDelivery, listWebhookDeliveries } from "../../../domain/webhooks/deliveries.js";
import {
  endpointSettingsErrors,
  type EndpointSettings,
  getWebhookEndpoint,
  listWebhookEndpoints,
  newEndpointErrors,
} from "../../../domain/webhooks/endpoints.js";
import type { MasterKey } from "../../../domain/signing/key-material.js";
import type { WebhookWorker } from "../../webhook-delivery.js";
import type {
  WebhookDelivery,
  WebhookDeliveryDetail,
  WebhookEndpoint,
} from "../../../contracts/webhooks.js";
import { webhookEventTypes, webhookLimits } from "../../../contracts/vocabulary.js";
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
  type Form,
  FormCheck,
  integerFrom,
  list,
  sendPage,
  text,
} from "../page-kit.js";
import { setFlash, takeFlash } from "../flash.js";
import { ShipkeyError } from "../../../errors.js";

const path = "/admin/webhooks";
const endpointFields = ["url", "events", "products", "description"];
const settingsFields = [...endpointFields, "enabled"];
const endpointPath = (id: string) => `${path}/${encodeURIComponent(id)}`;

/** How long the rotated-out secret keeps signing beside the new one: the rotate form's choices. */
const graceChoices: ReadonlyArray<{ seconds: number; label: string }> = [
  { seconds: 0, label: "none" },
  { seconds: 3_600, label: "1 hour" },
  { seconds: webhookLimits.defaultGraceSeconds, label: "1 day" },
  { seconds: webhookLimits.maxGraceSeconds, label: "7 days" },
];

/** The endpoints page: the endpoints and the new-endpoint form as last sent. */
interface EndpointsPage {
  context: PageContext;
  endpoints: WebhookEndpoint[];
  form: Form;
  errors: Record<string, string>;
  created?: { url: string; secret: string };
}

/**
 * One endpoint's page: its settings form (as last sent, or null: the endpoint's settings) with
 * its refusals, its recent deliveries, one delivery's payload when asked, and a new secret once.
 */
interface EndpointPage {
  context: PageContext;
  endpoint: WebhookEndpoint;
  deliveries: WebhookDelivery[];
  shown: WebhookDeliveryDetail | null;
  form: Form | null;
  errors: Record<string, string>;
  rotated?: { secret: string; previousSecretExpiresAt: string };
  flash?: string;
}

export function webhookPages(
  app: FastifyInstance,
  db: Kysely<DB>,
  masterKey: MasterKey,
  worker: WebhookWorker,
): void {
  const renderList = async (
    request: FastifyRequest,
    reply: FastifyReply,
    view: Omit<EndpointsPage, "context" | "endpoints">,
    status = 200,
  ) => {
    const endpoints = await listWebhookEndpoints(db);
    return sendPage(
      reply,
      endpointsView({ ...view, context: contextOf(request), endpoints }),
      status,
    );
  };

  app.get(path, async (request, reply) => {
    const created = takeFlash(request, reply, path);
    return renderList(request, reply, {
      form: {},
      errors: {},
      ...(created ? { created: { url: created.url ?? "", secret: created.secret ?? "" } } : {}),
    });
  });

  app.post<{ Body: Form }>(path, async (request, reply) => {
    const form = request.body;
    try {
      const input = {
        url: text(form, "url"),
        events: list(form, "events"),
        products: productsFrom(form),
        description: text(form, "description"),
      };
      const policy = { allowPrivate: worker.allowPrivate };
      FormCheck.refuse(await newEndpointErrors(db, input, policy));
      const endpoint = await createWebhookEndpoint(
        db,
        adminActor(request),
        masterKey,
        input,
        policy,
      );
      // Shown once, on the next page, from a sealed cookie.
      setFlash(request, reply, path, { url: endpoint.url, secret: endpoint.secret });
      return reply.redirect(path, 303);
    } catch (err) {
      return renderList(request, reply, { form, errors: errorsFor(err, endpointFields) }, 400);
    }
  });

  endpointPages(app, db, worker);
  rotateSecretPage(app, db, masterKey, worker);
}

/** One endpoint's page, its settings form and its buttons. */
function endpointPages(app: FastifyInstance, db: Kysely<DB>, worker: WebhookWorker): void {
  const renderEndpoint = async (
    request: FastifyRequest,
    reply: FastifyReply,
    id: string,
    view: Omit<EndpointPage, "context" | "endpoint" | "deliveries">,
    status = 200,
  ) => {
    const endpoint = await getWebhookEndpoint(db, id);
    const { items } = await listWebhookDeliveries(db, id, { limit: 50 });
    const context = contextOf(request);
    return sendPage(reply, endpointView({ ...view, context, endpoint, deliveries: items }), status);
  };

  app.get<{ Params: { id: string }; Querystring: { show?: string; done?: string } }>(
    `${path}/:id`,
    async (request, reply) => {
      const { id } = request.params;
      const { show, done } = request.query;
      // A rotation's new secret, shown once: it came in a sealed cookie for this page only.
      const rotated = takeFlash(request, reply, endpointPath(id));
      const flash = done === undefined ? undefined : doneMessages[done];
      return renderEndpoint(request, reply, id, {
        // A signed-in admin holds every scope, licenses:read too: the payload in full.
        shown:
          show === undefined
            ? null
            : await getWebhookDelivery(db, id, show, { licensesRead: true }),
        form: null,
        errors: {},
        ...(rotated?.secret
          ? {
              rotated: {
                secret: rotated.secret,
                previousSecretExpiresAt: rotated.previousSecretExpiresAt ?? "",
              },
            }
          : {}),
        ...(flash ? { flash } : {}),
      });
    },
  );

  app.post<{ Params: { id: string }; Body: Form | undefined }>(
    `${path}/:id/edit`,
    async (request, reply) => {
      const { id } = request.params;
      const form = request.body ?? {};
      const endpoint = await getWebhookEndpoint(db, id);
      const policy = { allowPrivate: worker.allowPrivate };
      try {
        const changes = changesFrom(endpoint, form);
        FormCheck.refuse(await endpointSettingsErrors(db, changes, policy));
        if (Object.keys(changes).length === 0) {
          return reply.redirect(`${endpointPath(id)}?done=unchanged`, 303);
        }
        const actor = adminActor(request);
        const updated = await updateWebhookEndpoint(db, actor, id, changes, policy);
        if (updated.enabled) worker.wake();
        return reply.redirect(`${endpointPath(id)}?done=edit`, 303);
      } catch (err) {
        const errors = errorsFor(err, settingsFields);
        return renderEndpoint(request, reply, id, { shown: null, form, errors }, 400);
      }
    },
  );

  app.post<{ Params: { id: string; action: string }; Body: Form }>(
    `${path}/:id/:action`,
    async (request, reply) => {
      const target = await endpointAction(db, worker, request);
      if (target === null) {
        throw new ShipkeyError("ROUTE_NOT_FOUND", "There is no such page in the dashboard.");
      }
      worker.wake();
      return reply.redirect(target, 303);
    },
  );
}

/** Rotate secret: the new secret shown once on the endpoint's page. */
function rotateSecretPage(
  app: FastifyInstance,
  db: Kysely<DB>,
  masterKey: MasterKey,
  worker: WebhookWorker,
): void {
  app.post<{ Params: { id: string }; Body: Form | undefined }>(
    `${path}/:id/rotate-secret`,
    async (request, reply) => {
      const { id } = request.params;
      const graceSeconds = integerFrom(request.body ?? {}, "graceSeconds");
      const actor = adminActor(request);
      const rotated = await rotateWebhookSecret(
        db,
        actor,
        masterKey,
        id,
        graceSeconds,
        worker.now(),
      );
      // Shown once, on the next page, from a sealed cookie; never in a URL, a log or the audit log.
      setFlash(request, reply, endpointPath(id), {
        secret: rotated.secret,
        previousSecretExpiresAt: rotated.previousSecretExpiresAt ?? "",
      });
      return reply.redirect(endpointPath(id), 303);
    },
  );
}

/** An endpoint's button: the page to go to next, or null for an unknown action. */
async function endpointAction(
  db: Kysely<DB>,
  worker: WebhookWorker,
  request: FastifyRequest<{ Params: { id: string; action: string }; Body: Form }>,
): Promise<string | null> {
  const { id, action } = request.params;
  const actor = adminActor(request);
  if (action === "delete") {
    await deleteWebhookEndpoint(db, actor, id);
    return path;
  }
  if (action === "enable" || action === "disable") {
    const policy = { allowPrivate: worker.allowPrivate };
    await updateWebhookEndpoint(db, actor, id, { enabled: action === "enable" }, policy);
  } else if (action === "test") {
    await sendWebhookTest(db, actor, id, worker.now());
  } else if (action === "redeliver") {
    await redeliverWebhook(db, actor, id, text(request.body, "eventId"), worker.now());
  } else {
    return null;
  }
  return `${endpointPath(id)}?done=${action}`;
}

/** A form's product slugs, comma-separated; none: every product (null). */
function productsFrom(form: Form): string[] | null {
  const products = text(form, "products")
    .split(",")
    .map((slug) => slug.trim())
    .filter((slug) => slug !== "");
  return products.length === 0 ? null : products;
}

/**
 * The settings the edit form changes: only those that differ from the endpoint's, so that saving
 * an enabled endpoint as it is does not reset its failures, and the audit entry names the changes.
 */
function changesFrom(endpoint: WebhookEndpoint, form: Form): EndpointSettings {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const url = text(form, "url");
  const events = list(form, "events");
  const products = productsFrom(form);
  const description = text(form, "description") === "" ? null : text(form, "description");
  const enabled = text(form, "enabled") !== "";
  return {
    ...(url === endpoint.url ? {} : { url }),
    ...(same([...events].sort(), [...endpoint.events].sort()) ? {} : { events }),
    ...(same(products, endpoint.products) ? {} : { products }),
    ...(description === endpoint.description ? {} : { description }),
    ...(enabled === endpoint.enabled ? {} : { enabled }),
  };
}

/** The edit form's values for the endpoint as it is. */
function settingsOf(endpoint: WebhookEndpoint): Form {
  return {
    url: endpoint.url,
    events: endpoint.events,
    products: endpoint.products?.join(", ") ?? "",
    description: endpoint.description ?? "",
    enabled: endpoint.enabled ? "on" : undefined,
  };
}

const doneMessages: Record<string, string> = {
  enable: "Endpoint enabled: its pending deliveries go out again.",
  disable: "Endpoint disabled: deliveries wait until it is enabled.",
  test: "Test event queued.",
  redeliver: "Delivery queued again.",
  edit: "Endpoint saved.",
  unchanged: "Nothing to save: the settings are as they were.",
};

function endpointsView(page: EndpointsPage): Html {
  return layout(
    "Webhooks",
    "webhooks",
    page.context,
    html`${page.created ? createdPanel(page.created) : ""}
      <p class="hint">
        Events are POSTed as JSON, signed the Standard Webhooks way, and retried for about a day
        (docs/webhooks.md).
      </p>
      ${
        page.endpoints.length === 0
          ? html`<div class="empty">No webhook endpoints yet.</div>`
          : endpointTable(page.endpoints)
      }
      ${newEndpointForm(page)}`,
  );
}

/** A new endpoint's secret, shown once. */
function createdPanel(created: { url: string; secret: string }): Html {
  return html`<section class="panel" aria-labelledby="new-endpoint-title">
    <h2 id="new-endpoint-title">Endpoint ${created.url} created</h2>
    <p>Copy its signing secret now: this is the only time it is shown.</p>
    <div class="secret">
      <code id="new-secret">${created.secret}</code
      ><button type="button" class="secondary" data-copy="new-secret">Copy</button>
    </div>
  </section>`;
}

function endpointTable(endpoints: WebhookEndpoint[]): Html {
  return html`<div class="table-wrap">
    <table>
      <thead>
        <tr>
          <th>URL</th>
          <th>Events</th>
          <th>Products</th>
          <th>Status</th>
          <th>Failures</th>
        </tr>
      </thead>
      <tbody>
        ${endpoints.map(
          (e) =>
            html`<tr>
              <td><a href="${path}/${e.id}">${e.url}</a></td>
              <td>${e.events.join(", ")}</td>
              <td>${e.products === null ? html`<em>all</em>` : e.products.join(", ")}</td>
              <td>${e.enabled ? badge("ACTIVE") : badge("DISABLED")}</td>
              <td>${e.consecutiveFailures}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

function newEndpointForm({ context, form, errors }: EndpointsPage): Html {
  return html`<h2>New endpoint</h2>
    <form method="post" action="${path}" class="stack panel">
      ${csrfField(context.csrfToken)} ${formError(errors)} ${settingInputs(form, errors)}
      <div class="actions"><button type="submit">Create endpoint</button></div>
    </form>`;
}

/** The URL, events, products and description inputs, as the form was last sent. */
function settingInputs(form: Form, errors: Record<string, string>): Html {
  const chosen = list(form, "events");
  return html`<label
      >URL
      <input
        name="url"
        required
        value="${text(form, "url")}"
        placeholder="https://crm.example.com/hooks"
        ${errors.url ? html`aria-invalid="true"` : ""}
      />
      ${fieldError(errors, "url")}</label
    >
    <fieldset>
      <legend>Events</legend>
      ${webhookEventTypes.map((type) => html`<label class="check"><input type="checkbox" name="events" value="${type}" ${chosen.includes(type) ? html`checked` : ""} /> <code>${type}</code></label>`)}
      ${fieldError(errors, "events")}
    </fieldset>
    <label
      >Products <span class="hint">(slugs, comma-separated; empty = every product)</span>
      <input
        name="products"
        value="${text(form, "products")}"
        ${errors.products ? html`aria-invalid="true"` : ""}
      />${fieldError(errors, "products")}</label
    >
    <label
      >Description
      <input
        name="description"
        value="${text(form, "description")}"
        ${errors.description ? html`aria-invalid="true"` : ""}
      />${fieldError(errors, "description")}</label
    >`;
}

function endpointView(page: EndpointPage): Html {
  const { endpoint, context } = page;
  const act = (action: string, label: string, confirm?: string) =>
    actionForm(
      context.csrfToken,
      { action: `${endpointPath(endpoint.id)}/${action}`, ...(confirm ? { confirm } : {}) },
      { label, class: action === "delete" ? "danger" : "secondary" },
    );
  return layout(
    `Webhook ${endpoint.url}`,
    "webhooks",
    context,
    html`${page.rotated ? rotatedPanel(page.rotated) : ""}
      <p>
        ${endpoint.enabled ? badge("ACTIVE") : badge("DISABLED")} ${endpoint.disabledReason ?? ""} ·
        events: ${endpoint.events.join(", ")} · consecutive failures:
        ${endpoint.consecutiveFailures}
      </p>
      <div class="actions">
        ${act("test", "Send test event")}
        ${endpoint.enabled ? act("disable", "Disable") : act("enable", "Enable")}
        ${act("delete", "Delete", `Delete the endpoint ${endpoint.url} and its deliveries?`)}
      </div>
      ${page.shown ? payloadPanel(page.shown) : ""}
      <h2>Recent deliveries</h2>
      ${
        page.deliveries.length === 0
          ? html`<div class="empty">No deliveries yet.</div>`
          : deliveryTable(endpoint.id, page.deliveries, context.csrfToken)
      }
      ${settingsForm(page)} ${rotateForm(endpoint, context.csrfToken)}`,
    page.flash,
  );
}

/** The endpoint's settings as last sent, each refusal beside its field. */
function settingsForm({ context, endpoint, form, errors }: EndpointPage): Html {
  const values = form ?? settingsOf(endpoint);
  return html`<h2 id="settings">Settings</h2>
    <form method="post" action="${endpointPath(endpoint.id)}/edit" class="stack panel">
      ${csrfField(context.csrfToken)} ${formError(errors)} ${settingInputs(values, errors)}
      <label class="check"
        ><input type="checkbox" name="enabled" ${text(values, "enabled") ? html`checked` : ""} />
        Enabled <span class="hint">(enabling clears the failure count)</span></label
      >${fieldError(errors, "enabled")}
      <div class="actions"><button type="submit">Save settings</button></div>
    </form>`;
}

/** A new secret, with the previous one signing beside it for the grace period chosen. */
function rotateForm(endpoint: WebhookEndpoint, csrfToken: string): Html {
  const previous = endpoint.previousSecretExpiresAt;
  return html`<h2 id="secret">Signing secret</h2>
    <form
      method="post"
      action="${endpointPath(endpoint.id)}/rotate-secret"
      class="stack panel"
      data-confirm="Give ${endpoint.url} a new signing secret? The receiver must be given it."
    >
      ${csrfField(csrfToken)}
      ${previous ? html`<p>The previous secret signs too until ${when(previous)}.</p>` : ""}
      <label
        >The current secret keeps signing beside the new one for
        <span class="hint">(none: it stops at once)</span>
        <select name="graceSeconds">
          ${graceChoices.map(
            (choice) =>
              html`<option
                value="${String(choice.seconds)}"
                ${choice.seconds === webhookLimits.defaultGraceSeconds ? html`selected` : ""}
              >
                ${choice.label}
              </option>`,
          )}
        </select></label
      >
      <div class="actions"><button type="submit" class="danger">Rotate secret</button></div>
    </form>`;
}

/** A rotation's new secret, shown once. */
function rotatedPanel(rotated: { secret: string; previousSecretExpiresAt: string }): Html {
  return html`<section class="panel" aria-labelledby="rotated-title">
    <h2 id="rotated-title">New signing secret</h2>
    <p>Copy it now: this is the only time it is shown.</p>
    <div class="secret">
      <code id="new-secret">${rotated.secret}</code
      ><button type="button" class="secondary" data-copy="new-secret">Copy</button>
    </div>
    <p>
      ${
        rotated.previousSecretExpiresAt === ""
          ? "The previous secret no longer signs."
          : html`The previous secret signs too until ${when(rotated.previousSecretExpiresAt)}.`
      }
    </p>
  </section>`;
}

function deliveryTable(id: string, deliveries: WebhookDelivery[], csrfToken: string): Html {
  return html`<div class="table-wrap">
    <table>
      <thead>
        <tr>
          <th>Created</th>
          <th>Event</th>
          <th>Status</th>
          <th>Response</th>
          <th>Duration</th>
          <th>Attempts</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        ${deliveries.map(
          (d) =>
            html`<tr>
              <td>${when(d.createdAt)}</td>
              <td><a href="${path}/${id}?show=${d.eventId}">${d.eventType}</a></td>
              <td>${d.status}</td>
              <td>${d.responseStatus ?? d.lastError ?? ""}</td>
              <td>${d.durationMs === null ? "" : `${d.durationMs} ms`}</td>
              <td>${d.attempts}</td>
              <td>
                ${actionForm(
                  csrfToken,
                  { action: `${path}/${id}/redeliver`, hidden: { eventId: d.eventId } },
                  { label: "Redeliver", class: "secondary" },
                )}
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

function payloadPanel(delivery: WebhookDeliveryDetail): Html {
  return html`<section class="panel" aria-labelledby="payload-title">
    <h2 id="payload-title">${delivery.eventType} <code>${delivery.eventId}</code></h2>
    <pre>${JSON.stringify(delivery.payload, null, 2)}</pre>
  </section>`;
}
