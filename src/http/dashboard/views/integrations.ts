import type { Integration } from "../../../contracts/integrations.js";
import { integrationModes, integrationProviders } from "../../../contracts/vocabulary.js";
import { type Form, text } from "../form-body.js";
import {
  csrfField,
  fieldError,
  formError,
  type Html,
  html,
  layout,
  type PageContext,
} from "../html.js";

const path = "/admin/integrations";

/** The integrations page: the integrations and the new-integration form as last sent. */
export interface IntegrationsPage {
  context: PageContext;
  integrations: Integration[];
  form: Form;
  errors: Record<string, string>;
}

export function integrationsView(page: IntegrationsPage): Html {
  return layout(
    "Integrations",
    "integrations",
    page.context,
    html`<p class="hint">
        A payment provider's signed events make and revoke licenses from their plans
        (docs/selling.md).
      </p>
      ${
        page.integrations.length === 0
          ? html`<div class="empty">No payment integrations yet.</div>`
          : integrationTable(page.integrations)
      }
      ${newIntegrationForm(page)}`,
  );
}

function integrationTable(integrations: Integration[]): Html {
  return html`<div class="table-wrap">
    <table>
      <thead>
        <tr>
          <th>Product</th>
          <th>Provider</th>
          <th>Mode</th>
          <th>Webhook URL</th>
          <th>Secrets</th>
        </tr>
      </thead>
      <tbody>
        ${integrations.map(
          (i) =>
            html`<tr>
              <td><a href="${path}/${i.id}">${i.product}</a></td>
              <td>${i.provider}</td>
              <td>${i.mode}</td>
              <td>
                <code id="url-${i.id}">${i.webhookUrl}</code
                ><button type="button" class="secondary" data-copy="url-${i.id}">Copy</button>
              </td>
              <td>${i.secrets.length}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

function choice(form: Form, name: string, label: string, values: readonly string[]): Html {
  const current = text(form, name) || values[0];
  return html`<label
    >${label}
    <select name="${name}">
      ${values.map(
        (value) =>
          html`<option value="${value}" ${value === current ? html`selected` : ""}>
            ${value}
          </option>`,
      )}
    </select>
  </label>`;
}

function newIntegrationForm({ context, form, errors }: IntegrationsPage): Html {
  const invalid = (name: string) => (errors[name] ? html`aria-invalid="true"` : "");
  return html`<h2>New integration</h2>
    <form method="post" action="${path}" class="stack panel">
      ${csrfField(context.csrfToken)} ${formError(errors)}
      <label
        >Product (slug)
        <input name="product" required value="${text(form, "product")}" ${invalid("product")} />
        ${fieldError(errors, "product")}</label
      >
      ${choice(form, "provider", "Provider", integrationProviders)}
      ${choice(form, "mode", "Mode", integrationModes)}
      <label
        >Description
        <input name="description" value="${text(form, "description")}" />
        ${fieldError(errors, "description")}</label
      >
      <label
        >Signing secret (never shown again)
        <input name="secret" type="password" required autocomplete="off" ${invalid("secret")} />
        ${fieldError(errors, "secret")}</label
      >
      <div class="actions"><button type="submit">Create integration</button></div>
    </form>`;
}
