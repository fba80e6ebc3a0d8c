import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import {
  createWebhookEndpointAudited,
  deleteWebhookEndpointAudited,
  redeliverWebhookAudited,
  sendWebhookTestAudited,
  updateWebhookEndpointAudited,
} from "../../../domain/audit/audited-actions.js";
import { getWebhookDelivery, listWebhookDeliveries } from "../../../domain/webhooks/deliveries.js";
import {
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
import { webhookEventTypes } from "../../../contracts/vocabulary.js";
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
  list,
  sendPage,
  text,
} from "../page-kit.js";
import { setFlash, takeFlash } from "../flash.js";
import { ShipkeyError } from "../../../errors.js";

const path = "/admin/webhooks";
const endpointFields = ["url", "events", "products", "description"];

/** The endpoints page: the endpoints and the new-endpoint form as last sent. */
interface EndpointsPage {
  context: PageContext;
  endpoints: WebhookEndpoint[];
  form: Form;
  errors: Record<string, string>;
  created?: { url: string; secret: string };
}

/** One endpoint's page: its recent deliveries, and one delivery's payload when asked. */
interface EndpointPage {
  context: PageContext;
  endpoint: WebhookEndpoint;
  deliveries: WebhookDelivery[];
  shown: WebhookDeliveryDetail | null;
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
      const products = text(form, "products")
        .split(",")
        .map((slug) => slug.trim())
        .filter((slug) => slug !== "");
      const input = {
        url: text(form, "url"),
        events: list(form, "events"),
        products: products.length === 0 ? null : products,
        description: text(form, "description"),
      };
      const policy = { allowPrivate: worker.allowPrivate };
      FormCheck.refuse(await newEndpointErrors(db, input, policy));
      const endpoint = await createWebhookEndpointAudited(
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

  app.get<{ Params: { id: string }; Querystring: { show?: string; done?: string } }>(
    `${path}/:id`,
    async (request, reply) => {
      const { id } = request.params;
      const endpoint = await getWebhookEndpoint(db, id);
      const { items } = await listWebhookDeliveries(db, id, { limit: 50 });
      const show = request.query.show;
      const shown = show === undefined ? null : await getWebhookDelivery(db, id, show);
      const flash = request.query.done === undefined ? undefined : doneMessages[request.query.done];
      const context = contextOf(request);
      return sendPage(
        reply,
        endpointView({ context, endpoint, deliveries: items, shown, ...(flash ? { flash } : {}) }),
      );
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

/** An endpoint's button: the page to go to next, or null for an unknown action. */
async function endpointAction(
  db: Kysely<DB>,
  worker: WebhookWorker,
  request: FastifyRequest<{ Params: { id: string; action: string }; Body: Form }>,
): Promise<string | null> {
  const { id, action } = request.params;
  const actor = adminActor(request);
  if (action === "delete") {
    await deleteWebhookEndpointAudited(db, actor, id);
    return path;
  }
  if (action === "enable" || action === "disable") {
    const policy = { allowPrivate: worker.allowPrivate };
    await updateWebhookEndpointAudited(db, actor, id, { enabled: action === "enable" }, policy);
  } else if (action === "test") {
    await sendWebhookTestAudited(db, actor, id, worker.now());
  } else if (action === "redeliver") {
    await redeliverWebhookAudited(db, actor, id, text(request.body, "eventId"), worker.now());
  } else {
    return null;
  }
  return `${path}/${encodeURIComponent(id)}?done=${action}`;
}

const doneMessages: Record<string, string> = {
  enable: "Endpoint enabled: its pending deliveries go out again.",
  disable: "Endpoint disabled: deliveries wait until it is enabled.",
  test: "Test event queued.",
  redeliver: "Delivery queued again.",
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
  const chosen = list(form, "events");
  return html`<h2>New endpoint</h2>
    <form method="post" action="${path}" class="stack panel">
      ${csrfField(context.csrfToken)} ${formError(errors)}
      <label
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
        >Description <input name="description" value="${text(form, "description")}" />${fieldError(
          errors,
          "description",
        )}</label
      >
      <div class="actions"><button type="submit">Create endpoint</button></div>
    </form>`;
}

function endpointView(page: EndpointPage): Html {
  const { endpoint, context } = page;
  const act = (action: string, label: string, confirm?: string) =>
    actionForm(
      context.csrfToken,
      { action: `${path}/${endpoint.id}/${action}`, ...(confirm ? { confirm } : {}) },
      { label, class: action === "delete" ? "danger" : "secondary" },
    );
  return layout(
    `Webhook ${endpoint.url}`,
    "webhooks",
    context,
    html`<p>
        ${endpoint.enabled ? badge("ACTIVE") : badge("DISABLED")} ${endpoint.disabledReason ?? ""} ·
        events: ${endpoint.events.join(", ")}
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
      }`,
    page.flash,
  );
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
