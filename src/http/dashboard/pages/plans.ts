import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import * as actions from "../../../actions/plans.js";
import { CreatePlanBody, PlanSettingsBody } from "../../../contracts/plans.js";
import { listPlans } from "../../../domain/plans/plans.js";
import { requireProduct } from "../../../domain/products/products.js";
import { type Form, formBody, formFailure } from "../form-body.js";
import { adminActor, contextOf, redirectDone, sendPage } from "../page-kit.js";
import { plansPath, plansView, type PlansPage } from "../views/plans.js";

type PlanRequest = FastifyRequest<{ Params: { slug: string; plan?: string }; Body: Form }>;

const fields = Object.keys(CreatePlanBody.properties);

/**
 * A product's plans (license templates, docs/selling.md): each with its settings to edit, archive
 * or delete, and a form for a new one. Each form is read as the admin API's body of the same
 * write. Changing a plan changes no license made from it.
 */
export function planPages(app: FastifyInstance, db: Kysely<DB>): void {
  const render = async (
    request: FastifyRequest<{ Params: { slug: string } }>,
    reply: FastifyReply,
    view: Pick<PlansPage, "form" | "formOf" | "errors">,
    status = 200,
  ) => {
    const { slug } = request.params;
    const product = await requireProduct(db, slug);
    const plans = await listPlans(db, slug);
    const page = { ...view, context: contextOf(request), product, plans };
    return sendPage(reply, plansView(page), status);
  };
  /** A POST: make the change and go back to the page, or show the page with the refusal. */
  const change = (route: string, act: (request: PlanRequest) => Promise<string>) =>
    app.post<{ Params: { slug: string; plan?: string }; Body: Form }>(
      `/admin/products/:slug/plans${route}`,
      async (request, reply) => {
        try {
          return redirectDone(request, reply, plansPath(request.params.slug), await act(request));
        } catch (err) {
          const { status, errors } = formFailure(err, fields);
          const formOf = request.params.plan ?? "new";
          return render(request, reply, { form: request.body, formOf, errors }, status);
        }
      },
    );
  const planOf = (request: PlanRequest) => request.params.plan ?? "";

  app.get<{ Params: { slug: string } }>("/admin/products/:slug/plans", async (request, reply) =>
    render(request, reply, { form: {}, formOf: "", errors: {} }),
  );

  change("", async (request) => {
    const body = await formBody(CreatePlanBody, request.body);
    await actions.createPlan(db, adminActor(request), request.params.slug, body);
    return "Plan created.";
  });
  change("/:plan", async (request) => {
    const body = await formBody(PlanSettingsBody, request.body);
    await actions.updatePlan(db, adminActor(request), request.params.slug, planOf(request), body);
    return "Plan saved. Licenses made from it keep their settings; new ones get these.";
  });
  change("/:plan/archive", async (request) => {
    await actions.archivePlan(db, adminActor(request), request.params.slug, planOf(request));
    return "Plan archived: it makes no new license.";
  });
  change("/:plan/unarchive", async (request) => {
    await actions.unarchivePlan(db, adminActor(request), request.params.slug, planOf(request));
    return "Plan back in use.";
  });
  change("/:plan/delete", async (request) => {
    await actions.deletePlan(db, adminActor(request), request.params.slug, planOf(request));
    return "Plan deleted.";
  });
}
