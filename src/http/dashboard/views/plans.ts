import { planReactions, type PlanReaction } from "../../../contracts/vocabulary.js";
import type { Plan } from "../../../domain/plans/plans.js";
import type { Product } from "../../../domain/products/products.js";
import { type Form, text } from "../form-body.js";
import {
  actionForm,
  csrfField,
  fieldError,
  formError,
  type Html,
  html,
  layout,
  type PageContext,
} from "../html.js";

/** What the plans page shows: the product, its plans, a form as last sent and its refusals. */
export interface PlansPage {
  context: PageContext;
  product: Product;
  plans: Plan[];
  /** The form sent, and which one: "new", a plan's slug, or "" for none. */
  form: Form;
  formOf: string;
  errors: Record<string, string>;
}

export const plansPath = (slug: string) => `/admin/products/${encodeURIComponent(slug)}/plans`;

/** The new-plan form's values before anything is typed. */
const blank: Form = { graceDays: "0", onRefund: "revoke", onChargeback: "suspend" };

export function plansView(page: PlansPage): Html {
  const { context, product, plans } = page;
  const editing = (plan: Plan) => (page.formOf === plan.slug ? page : null);
  return layout(
    `Plans of ${product.name}`,
    "products",
    context,
    html`<p><a href="/admin/products">Products</a> / ${product.name}</p>
      <p class="hint">
        A plan is what a sale gives: the licenses made from it copy its settings and remember it.
        Changing a plan changes no license made from it.
      </p>
      ${page.formOf === "" ? formError(page.errors) : ""}
      ${
        plans.length === 0
          ? html`<div class="empty"><p>No plans yet. Create the first one below.</p></div>`
          : plans.map((plan) => planPanel(product, plan, context.csrfToken, editing(plan)))
      }
      <h2>New plan</h2>
      ${planForm(
        plansPath(product.slug),
        context.csrfToken,
        page.formOf === "new" ? page : { form: blank, errors: {} },
        null,
      )}`,
  );
}

function summary(plan: Plan): string {
  const term = plan.durationDays === null ? "perpetual" : `${plan.durationDays} days`;
  const updates =
    plan.updatesWindowDays === null
      ? "updates while valid"
      : `${plan.updatesWindowDays} days of updates`;
  const kind = plan.subscription ? `subscription, ${plan.graceDays} days of grace` : term;
  return `${plan.maxMachines} machines per unit · ${kind} · ${updates}`;
}

function planPanel(
  product: Product,
  plan: Plan,
  csrfToken: string,
  sent: Pick<PlansPage, "form" | "errors"> | null,
): Html {
  const path = `${plansPath(product.slug)}/${encodeURIComponent(plan.slug)}`;
  const archived = plan.archivedAt !== null;
  return html`<section class="panel">
    <h2>
      ${plan.name} <span class="mono hint">${plan.slug}</span>
      ${archived ? html`<span class="badge">archived</span>` : ""}
    </h2>
    <p>${summary(plan)}; ${plan.licenses} licenses made from it.</p>
    ${sent ? formError(sent.errors) : ""}
    <details ${sent ? html`open` : ""}>
      <summary>Edit</summary>
      ${planForm(path, csrfToken, sent ?? { form: formOf(plan), errors: {} }, plan)}
    </details>
    <div class="actions">
      ${actionForm(
        csrfToken,
        { action: `${path}/${archived ? "unarchive" : "archive"}`, class: "inline" },
        { label: archived ? "Unarchive" : "Archive", class: "secondary" },
      )}
      ${
        plan.licenses === 0
          ? actionForm(
              csrfToken,
              { action: `${path}/delete`, class: "inline", confirm: `Delete plan ${plan.name}?` },
              { label: "Delete", class: "danger" },
            )
          : ""
      }
    </div>
  </section>`;
}

/** A plan's settings as the form shows them. */
function formOf(plan: Plan): Form {
  const number = (value: number | null) => (value === null ? "" : String(value));
  return {
    name: plan.name,
    edition: plan.edition ?? "",
    editionName: plan.editionName ?? "",
    features: plan.features.join(", "),
    maxMachines: String(plan.maxMachines),
    durationDays: number(plan.durationDays),
    updatesWindowDays: number(plan.updatesWindowDays),
    subscription: plan.subscription ? "on" : "",
    graceDays: String(plan.graceDays),
    onRefund: plan.onRefund,
    onChargeback: plan.onChargeback,
    floatingLeaseMinutes: number(plan.floatingLeaseMinutes),
  };
}

function planForm(
  action: string,
  csrfToken: string,
  sent: Pick<PlansPage, "form" | "errors">,
  plan: Plan | null,
): Html {
  const { form, errors } = sent;
  const input = (name: string, label: string, hint = "", attributes: Html | string = "") =>
    html`<label
      >${label} ${hint === "" ? "" : html`<span class="hint">(${hint})</span>`}
      <input
        name="${name}"
        value="${text(form, name)}"
        ${attributes}
        ${errors[name] ? html`aria-invalid="true"` : ""}
      />${fieldError(errors, name)}</label
    >`;
  const select = (name: string, label: string, fallback: PlanReaction) => {
    const current = text(form, name) || fallback;
    return html`<label
      >${label}
      <select name="${name}">
        ${planReactions.map(
          (value) =>
            html`<option value="${value}" ${value === current ? html`selected` : ""}>
              ${value}
            </option>`,
        )}
      </select>
      ${fieldError(errors, name)}</label
    >`;
  };
  return html`<form method="post" action="${action}" class="stack">
    ${csrfField(csrfToken)}
    <div class="grid-2">
      ${input("name", "Name", "", html`required`)}
      ${
        plan === null
          ? input("slug", "Slug", "your stable code: lowercase, digits, dashes", html`required`)
          : ""
      }
      ${input("maxMachines", "Machines", "per unit bought", html`required inputmode="numeric"`)}
      ${input("edition", "Edition", "code, e.g. pro")} ${input("editionName", "Edition name")}
      ${input("features", "Features", "comma-separated")}
      ${input("durationDays", "Duration in days", "empty: perpetual", html`inputmode="numeric"`)}
      ${input("updatesWindowDays", "Updates window in days", "empty: while valid")}
      <label
        ><input
          type="checkbox"
          name="subscription"
          ${text(form, "subscription") === "on" ? html`checked` : ""}
        />
        Subscription (expires at the paid period's end plus grace)</label
      >
      ${input("graceDays", "Grace in days", "subscriptions", html`inputmode="numeric"`)}
      ${select("onRefund", "A full refund", "revoke")}
      ${select("onChargeback", "A chargeback", "suspend")}
      ${input("floatingLeaseMinutes", "Floating lease in minutes", "1 to 1440; empty: node-locked")}
    </div>
    <div class="actions">
      <button type="submit">${plan === null ? "Create plan" : "Save plan"}</button>
    </div>
  </form>`;
}
