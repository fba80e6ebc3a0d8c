import type { FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import * as actions from "../../../actions/plans.js";
import { listPlans, requirePlan } from "../../../domain/plans/plans.js";
import { ShipkeyError } from "../../../errors.js";
import { parseIsoTimestamp } from "../../../lib/time.js";
import * as contracts from "../../../contracts/plans.js";
import { requireActor, requireProductInKey } from "../../admin-auth.js";
import { adminRoute, type App } from "../../contract-route.js";

/** A product's plans: /api/admin/products/{slug}/plans… (contracts/plans.ts). */
export function adminPlanRoutes(app: App, db: Kysely<DB>): void {
  // A key limited to products reaches only their plans.
  const inKey = requireProductInKey<FastifyRequest<{ Params: { slug: string } }>>(db, (r) => ({
    productSlug: r.params.slug,
  }));

  app.get(
    contracts.listPlans.url,
    { ...adminRoute(db, contracts.listPlans), preHandler: inKey },
    async (request) => ({ items: await listPlans(db, request.params.slug) }),
  );

  app.post(
    contracts.createPlan.url,
    { ...adminRoute(db, contracts.createPlan), preHandler: inKey },
    async (request, reply) => {
      const plan = await actions.createPlan(
        db,
        requireActor(request),
        request.params.slug,
        request.body,
        request.idempotencyClaim,
      );
      return reply.status(201).send(plan);
    },
  );

  app.get(
    contracts.getPlan.url,
    { ...adminRoute(db, contracts.getPlan), preHandler: inKey },
    async (request) => requirePlan(db, request.params.slug, request.params.plan),
  );

  app.patch(
    contracts.updatePlan.url,
    { ...adminRoute(db, contracts.updatePlan), preHandler: inKey },
    async (request) =>
      actions.updatePlan(
        db,
        requireActor(request),
        request.params.slug,
        request.params.plan,
        request.body,
        request.idempotencyClaim,
      ),
  );

  app.post(
    contracts.archivePlan.url,
    { ...adminRoute(db, contracts.archivePlan), preHandler: inKey },
    async (request) =>
      actions.archivePlan(
        db,
        requireActor(request),
        request.params.slug,
        request.params.plan,
        request.idempotencyClaim,
      ),
  );

  app.post(
    contracts.unarchivePlan.url,
    { ...adminRoute(db, contracts.unarchivePlan), preHandler: inKey },
    async (request) =>
      actions.unarchivePlan(
        db,
        requireActor(request),
        request.params.slug,
        request.params.plan,
        request.idempotencyClaim,
      ),
  );

  app.delete(
    contracts.deletePlan.url,
    { ...adminRoute(db, contracts.deletePlan), preHandler: inKey },
    async (request) => {
      const { slug, plan } = request.params;
      await actions.deletePlan(db, requireActor(request), slug, plan, request.idempotencyClaim);
      return { deleted: true, product: slug, plan } as const;
    },
  );

  app.post(
    contracts.createPlanLicense.url,
    { ...adminRoute(db, contracts.createPlanLicense), preHandler: inKey },
    async (request, reply) => {
      const { periodEndsAt, ...purchase } = request.body;
      const periodEnd = periodEndsAt === undefined ? null : parseIsoTimestamp(periodEndsAt);
      if (periodEndsAt !== undefined && periodEnd === null) {
        throw new ShipkeyError(
          "INVALID_FIELD_VALUE",
          "periodEndsAt must be an ISO 8601 timestamp with a zone",
          { field: "periodEndsAt" },
        );
      }
      const plan = await requirePlan(db, request.params.slug, request.params.plan);
      const license = await actions.createLicenseFromPlan(
        db,
        requireActor(request),
        plan.id,
        {
          ...purchase,
          periodEndsAt: periodEnd,
        },
        request.idempotencyClaim,
      );
      return reply.status(201).send(license);
    },
  );
}
