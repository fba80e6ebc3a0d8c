import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import { type Actor, withAudit } from "../domain/audit/audit-log.js";
import type { IdempotencyClaim } from "../domain/idempotency/idempotency-keys.js";
import { maskLicenseKey } from "../domain/licenses/license-key.js";
import { licenseIdOfKey } from "../domain/licenses/license-record.js";
import * as planLicenses from "../domain/plans/license-from-plan.js";
import * as plans from "../domain/plans/plans.js";
import { emitWebhookEvent } from "../domain/webhooks/events.js";

// A product's plans and the licenses made from them: the use cases' actions. Each runs its
// checks, its rows, its webhook events and its audit entry in one transaction (withAudit), so the
// admin API, the dashboard, the CLI and the payment integrations record the same entry. No plan
// event is sent (there is none for products either); a license made from a plan sends
// license.created.

const planEntry = (plan: plans.Plan, details: Record<string, unknown> = {}) => ({
  target: { type: "plan", id: plan.id },
  details: { product: plan.product, slug: plan.slug, ...details },
});

export const createPlan = (
  db: Kysely<DB>,
  actor: Actor,
  productSlug: string,
  input: plans.NewPlan,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "plan.create",
    (trx) => plans.createPlan(trx, productSlug, input),
    (plan) => planEntry(plan, { name: plan.name, maxMachines: plan.maxMachines }),
    idempotency,
  );

/**
 * The given settings of a plan, for the licenses made from now on; the licenses already made keep
 * theirs. Audited with each setting that changed, its old and new value (`changes`).
 */
export const updatePlan = (
  db: Kysely<DB>,
  actor: Actor,
  productSlug: string,
  planSlug: string,
  changes: plans.PlanSettings,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "plan.update",
    async (trx) => {
      const before = await plans.requirePlan(trx, productSlug, planSlug);
      const after = await plans.updatePlan(trx, productSlug, planSlug, changes);
      return { after, changes: plans.planChanges(before, after) };
    },
    ({ after, changes: values }) => planEntry(after, { changes: values }),
    idempotency,
  ).then(({ after }) => after);

/** An archived plan makes no new license; its licenses are unchanged. */
export const archivePlan = (
  db: Kysely<DB>,
  actor: Actor,
  productSlug: string,
  planSlug: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "plan.archive",
    (trx) => plans.setPlanArchived(trx, productSlug, planSlug, true),
    (plan) => planEntry(plan),
    idempotency,
  );

export const unarchivePlan = (
  db: Kysely<DB>,
  actor: Actor,
  productSlug: string,
  planSlug: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "plan.unarchive",
    (trx) => plans.setPlanArchived(trx, productSlug, planSlug, false),
    (plan) => planEntry(plan),
    idempotency,
  );

/** Deletes a plan that made no license (409 PLAN_IN_USE otherwise: archive it instead). */
export const deletePlan = (
  db: Kysely<DB>,
  actor: Actor,
  productSlug: string,
  planSlug: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "plan.delete",
    (trx) => plans.deletePlan(trx, productSlug, planSlug),
    (plan) => planEntry(plan),
    idempotency,
  );

/**
 * A license made from the plan with id `planId` (its settings copied, seats = slots × quantity),
 * remembering the plan: what a payment integration calls for a paid order. Audited as
 * license.create with the plan and quantity; sends license.created.
 */
export const createLicenseFromPlan = (
  db: Kysely<DB>,
  actor: Actor,
  planId: string,
  purchase: planLicenses.PlanPurchase = {},
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "license.create",
    async (trx) => {
      const license = await planLicenses.createLicenseFromPlan(trx, planId, purchase);
      await emitWebhookEvent(trx, {
        type: "license.created",
        product: license.product,
        data: { license },
      });
      return { license, id: await licenseIdOfKey(trx, license.licenseKey) };
    },
    ({ license, id }) => ({
      target: { type: "license", id },
      details: {
        licenseKey: maskLicenseKey(license.licenseKey),
        product: license.product,
        maxMachines: license.maxMachines,
        status: license.status,
        planId,
        quantity: purchase.quantity ?? 1,
      },
    }),
    idempotency,
  ).then(({ license }) => license);
