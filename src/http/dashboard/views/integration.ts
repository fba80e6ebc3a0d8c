import type {
  Integration,
  IntegrationEvent,
  PriceMapping,
} from "../../../contracts/integrations.js";
import type { Plan } from "../../../contracts/plans.js";
import { integrationModes, quantityMeanings } from "../../../contracts/vocabulary.js";
import { type Form, text } from "../form-body.js";
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

export const integrationPath = (id: string) => `/admin/integrations/${encodeURIComponent(id)}`;

/**
 * One integration's page: its settings form (as last sent, or null: the integration's own), its
 * secrets (never their values), its price mappings with the product's plans, its latest events.
 */
export interface IntegrationPage {
  context: PageContext;
  integration: Integration;
  prices: PriceMapping[];
  plans: Plan[];
  events: IntegrationEvent[];
  form: Form | null;
  errors: Record<string, string>;
}

export function integrationView(page: IntegrationPage): Html {
  const { integration: i } = page;
  return layout(
    `${i.provider} for ${i.product}`,
    "integrations",
    page.context,
    html`<p><a href="/admin/integrations">All integrations</a></p>
      ${formError(page.errors)}
      <p>
        Webhook URL: <code id="webhook-url">${i.webhookUrl}</code
        ><button type="button" class="secondary" data-copy="webhook-url">Copy</button>
      </p>
      ${settingsForm(page)} ${secretsSection(page)} ${pricesSection(page)} ${eventsSection(page)}`,
  );
}

function select(name: string, values: readonly string[], current: string): Html {
  return html`<select name="${name}">
    ${values.map(
      (value) =>
        html`<option value="${value}" ${value === current ? html`selected` : ""}>${value}</option>`,
    )}
  </select>`;
}

function settingsForm({ context, integration, form, errors }: IntegrationPage): Html {
  // The form as sent when it was this one; the integration's own when another form was refused.
  const sent = form !== null && "mode" in form ? form : null;
  const mode = sent === null ? integration.mode : text(sent, "mode");
  const description = sent === null ? (integration.description ?? "") : text(sent, "description");
  return html`<h2>Settings</h2>
    <form method="post" action="${integrationPath(integration.id)}/edit" class="stack panel">
      ${csrfField(context.csrfToken)}
      <label>Mode ${select("mode", integrationModes, mode)} ${fieldError(errors, "mode")}</label>
      <label
        >Description
        <input name="description" value="${description}" />
        ${fieldError(errors, "description")}</label
      >
      <div class="actions"><button type="submit">Save</button></div>
    </form>`;
}

function secretsSection({ context, integration, errors }: IntegrationPage): Html {
  const base = integrationPath(integration.id);
  return html`<h2>Signing secrets</h2>
    <p class="hint">
      To rotate: add the new secret, set it at the provider, then remove the old one.
    </p>
    <ul>
      ${integration.secrets.map(
        (s) =>
          html`<li>
            <code>${s.id}</code>, added ${when(s.createdAt)}
            ${actionForm(
              context.csrfToken,
              { action: `${base}/secrets/remove`, hidden: { secretId: s.id } },
              { label: "Remove", class: "secondary", ariaLabel: `Remove secret ${s.id}` },
            )}
          </li>`,
      )}
    </ul>
    <form method="post" action="${base}/secrets" class="stack panel">
      ${csrfField(context.csrfToken)}
      <label
        >New signing secret (never shown again)
        <input name="secret" type="password" required autocomplete="off" />
        ${fieldError(errors, "secret")}</label
      >
      <div class="actions"><button type="submit">Add secret</button></div>
    </form>`;
}

function pricesSection({
  context,
  integration,
  prices,
  plans,
  form,
  errors,
}: IntegrationPage): Html {
  const base = integrationPath(integration.id);
  const planName = (id: string) => plans.find((p) => p.id === id)?.slug ?? id;
  return html`<h2>Prices</h2>
    ${
      prices.length === 0
        ? html`<div class="empty">No price is mapped: every sale's event is ignored.</div>`
        : html`<ul>
            ${prices.map(
              (p) =>
                html`<li>
                  <code>${p.priceId}</code> sells ${planName(p.planId)} (quantity:
                  ${p.quantityMeans})
                  ${actionForm(
                    context.csrfToken,
                    { action: `${base}/prices/remove`, hidden: { priceId: p.priceId } },
                    { label: "Unmap", class: "secondary", ariaLabel: `Unmap ${p.priceId}` },
                  )}
                </li>`,
            )}
          </ul>`
    }
    <form method="post" action="${base}/prices" class="stack panel">
      ${csrfField(context.csrfToken)}
      <label
        >Price id
        <input name="priceId" required value="${text(form ?? {}, "priceId")}" />
        ${fieldError(errors, "priceId")}</label
      >
      <label
        >Plan
        <select name="planId">
          ${plans.map((p) => html`<option value="${p.id}">${p.slug}</option>`)}
        </select>
        ${fieldError(errors, "planId")}</label
      >
      <label
        >Quantity means
        ${select("quantityMeans", quantityMeanings, text(form ?? {}, "quantityMeans"))}
      </label>
      <div class="actions"><button type="submit">Map price</button></div>
    </form>`;
}

function eventsSection({ context, integration, events }: IntegrationPage): Html {
  const base = integrationPath(integration.id);
  if (events.length === 0)
    return html`<h2>Events</h2>
      <div class="empty">No events yet.</div>`;
  return html`<h2>Events</h2>
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th>Received</th>
            <th>Type</th>
            <th>Status</th>
            <th>Reason</th>
            <th></th>
          </tr>
        </thead>
        <tbody>
          ${events.map(
            (e) =>
              html`<tr>
                <td>${when(e.receivedAt)}</td>
                <td><code>${e.eventType}</code></td>
                <td>${badge(e.status)}</td>
                <td>${e.reason ?? ""}</td>
                <td>
                  ${
                    e.status !== "processed" && e.bodyKept
                      ? actionForm(
                          context.csrfToken,
                          { action: `${base}/events/replay`, hidden: { eventId: e.id } },
                          { label: "Replay", class: "secondary", ariaLabel: `Replay ${e.id}` },
                        )
                      : ""
                  }
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>`;
}
