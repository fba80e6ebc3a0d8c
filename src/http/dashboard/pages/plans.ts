import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import {
  archivePlan,
  createPlan,
  deletePlan,
  unarchivePlan,
  updatePlan,
} from "../../../actions/plans.js";
import { planReactions, type PlanReaction } from "../../../contracts/vocabulary.js";
import { listPlans, type Plan, type PlanSettings } from "../../../domain/plans/plans.js";
import { type Product, requireProduct } from "../../../domain/products/products.js";
import { httpStatusByCode, ShipkeyError } from "../../../errors.js";
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
import {
  adminActor,
  contextOf,
  errorsFor,
  type Form,
  FormCheck,
  integerFrom,
  sendPage,
  text,
} from "../page-kit.js";

const done: Record<string, string> = {
  created: "Plan created.",
  saved: "Plan saved. Licenses made from it keep their settings; new ones get these.",
  archived: "Plan archived: it makes no new license.",
  unarchived: "Plan back in use.",
  deleted: "Plan deleted.",
};

/** What the plans page shows: the product, its plans, a form as last sent and its refusals. */
interface PlansPage {
  context: PageContext;
  product: Product;
  plans: Plan[];
  /** The form sent, and which one: "new" or a plan's slug. */
  form: Form;
  formOf: string;
  errors: Record<string, string>;
  flash?: string;
}

const fields = [
  "slug",
  "name",
  "edition",
  "editionName",
  "features",
  "maxMachines",
  "durationDays",
  "updatesWindowDays",
  "subscription",
  "graceDays",
  "onRefund",
  "onChargeback",
  "floatingLeaseMinutes",
];

type PlanRequest = FastifyRequest<{ Params: { slug: string; plan?: string }; Body: Form }>;

const plansPath = (slug: string) => `/admin/products/${encodeURIComponent(slug)}/plans`;

/**
 * A product's plans (license templates, docs/selling.md): each with its settings to edit, archive
 * or delete, and a form for a new one. Changing a plan changes no license made from it.
 */
export function planPages(app: FastifyInstance, db: Kysely<DB>): void {
  const render = async (
    request: FastifyRequest<{ Params: { slug: string } }>,
    reply: FastifyReply,
    view: Pick<PlansPage, "form" | "formOf" | "errors" | "flash">,
    status = 200,
  ) => {
    const { slug } = request.params;
    const [product, plans] = [await requireProduct(db, slug), await listPlans(db, slug)];
    return sendPage(
      reply,
      plansView({ ...view, context: contextOf(request), product, plans }),
      status,
    );
  };
  /** A POST: make the change and go back to the page, or show the page with the refusal. */
  const change = (route: string, act: (request: PlanRequest) => Promise<string>) =>
    app.post<{ Params: { slug: string; plan?: string }; Body: Form }>(
      `/admin/products/:slug/plans${route}`,
      async (request, reply) => {
        try {
          const to = await act(request);
          return reply.redirect(`${plansPath(request.params.slug)}?done=${to}`, 303);
        } catch (err) {
          const errors = errorsFor(err, fields);
          const formOf = request.params.plan ?? "new";
          const status = err instanceof ShipkeyError ? httpStatusByCode[err.code] : 400;
          return render(request, reply, { form: request.body, formOf, errors }, status);
        }
      },
    );

  app.get<{ Params: { slug: string }; Querystring: { done?: string } }>(
    "/admin/products/:slug/plans",
    async (request, reply) =>
      render(request, reply, {
        form: {},
        formOf: "",
        errors: {},
        flash: done[request.query.done ?? ""],
      }),
  );

  change("", async (request) => {
    const settings = settingsFrom(request.body);
    await createPlan(db, adminActor(request), request.params.slug, {
      ...settings,
      slug: text(request.body, "slug"),
      maxMachines: settings.maxMachines,
    });
    return "created";
  });
  change("/:plan", async (request) => {
    const { slug, plan = "" } = request.params;
    await updatePlan(db, adminActor(request), slug, plan, settingsFrom(request.body));
    return "saved";
  });
  change("/:plan/archive", async (request) => {
    await archivePlan(db, adminActor(request), request.params.slug, request.params.plan ?? "");
    return "archived";
  });
  change("/:plan/unarchive", async (request) => {
    await unarchivePlan(db, adminActor(request), request.params.slug, request.params.plan ?? "");
    return "unarchived";
  });
  change("/:plan/delete", async (request) => {
    await deletePlan(db, adminActor(request), request.params.slug, request.params.plan ?? "");
    return "deleted";
  });
}

/** The form's settings, every field parsed (each refusal beside its field); "" is none. */
function settingsFrom(form: Form): PlanSettings & { name: string; maxMachines: number } {
  const check = new FormCheck();
  const optionalDays = (name: string) =>
    check.field(() => (text(form, name) === "" ? null : integerFrom(form, name)), null);
  const reaction = (name: string): PlanReaction =>
    check.field(() => {
      const value = text(form, name);
      if ((planReactions as readonly string[]).includes(value)) return value as PlanReaction;
      throw new ShipkeyError(
        "INVALID_FIELD_VALUE",
        `${name} must be one of ${planReactions.join(", ")}`,
        {
          field: name,
        },
      );
    }, "nothing");
  const settings = {
    name: text(form, "name"),
    edition: text(form, "edition"),
    editionName: text(form, "editionName"),
    features: text(form, "features")
      .split(",")
      .map((feature) => feature.trim())
      .filter((feature) => feature !== ""),
    maxMachines: check.field(() => integerFrom(form, "maxMachines"), 1),
    durationDays: optionalDays("durationDays"),
    updatesWindowDays: optionalDays("updatesWindowDays"),
    subscription: text(form, "subscription") === "on",
    graceDays: check.field(
      () => (text(form, "graceDays") === "" ? 0 : integerFrom(form, "graceDays")),
      0,
    ),
    onRefund: reaction("onRefund"),
    onChargeback: reaction("onChargeback"),
    floatingLeaseMinutes: optionalDays("floatingLeaseMinutes"),
  };
  check.done();
  return settings;
}

function plansView(page: PlansPage): Html {
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
        page.formOf === "new" ? page : { form: {}, errors: {} },
        null,
      )}`,
    page.flash,
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
