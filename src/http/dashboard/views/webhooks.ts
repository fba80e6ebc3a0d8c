import type {
  WebhookDelivery,
  WebhookDeliveryDetail,
  WebhookEndpoint,
} from "../../../contracts/webhooks.js";
import { webhookEventTypes, webhookLimits } from "../../../contracts/vocabulary.js";
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

const path = "/admin/webhooks";
export const endpointPath = (id: string) => `${path}/${encodeURIComponent(id)}`;

/** How long the rotated-out secret keeps signing beside the new one: the rotate form's choices. */
const graceChoices: ReadonlyArray<{ seconds: number; label: string }> = [
  { seconds: 0, label: "none" },
  { seconds: 3_600, label: "1 hour" },
  { seconds: webhookLimits.defaultGraceSeconds, label: "1 day" },
  { seconds: webhookLimits.maxGraceSeconds, label: "7 days" },
];

/** The endpoints page: the endpoints and the new-endpoint form as last sent. */
export interface EndpointsPage {
  context: PageContext;
  endpoints: WebhookEndpoint[];
  form: Form;
  errors: Record<string, string>;
}

/**
 * One endpoint's page: its settings form (as last sent, or null: the endpoint's settings) with
 * its refusals, its recent deliveries, one delivery's payload when asked; a new secret once
 * comes in the page's notice.
 */
export interface EndpointPage {
  context: PageContext;
  endpoint: WebhookEndpoint;
  deliveries: WebhookDelivery[];
  shown: WebhookDeliveryDetail | null;
  form: Form | null;
  errors: Record<string, string>;
}

export function endpointsView(page: EndpointsPage): Html {
  const created = secretOf(page.context.notice);
  return layout(
    "Webhooks",
    "webhooks",
    page.context,
    html`${created ? createdPanel(created) : ""}
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
function createdPanel(created: Record<string, string>): Html {
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

export function endpointView(page: EndpointPage): Html {
  const { endpoint, context } = page;
  const rotated = secretOf(context.notice);
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
    html`${rotated ? rotatedPanel(rotated) : ""}
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
function rotatedPanel(rotated: Record<string, string>): Html {
  const previousUntil = rotated.previousSecretExpiresAt ?? "";
  return html`<section class="panel" aria-labelledby="rotated-title">
    <h2 id="rotated-title">New signing secret</h2>
    <p>Copy it now: this is the only time it is shown.</p>
    <div class="secret">
      <code id="new-secret">${rotated.secret}</code
      ><button type="button" class="secondary" data-copy="new-secret">Copy</button>
    </div>
    <p>
      ${
        previousUntil === ""
          ? "The previous secret no longer signs."
          : html`The previous secret signs too until ${when(previousUntil)}.`
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
