import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { limits, planRanges } from "../../contracts/vocabulary.js";
import { type CreateLicenseInput, createLicense } from "../licenses/manage-licenses.js";
import type { LicenseView } from "../licenses/license-views.js";
import { defaultReactions, findPlanById, type Plan } from "./plans.js";

const dayMs = 86_400_000;

/** What a sale adds to its plan: how many units, who bought, and the sale's own reference. */
export interface PlanPurchase {
  /** Units bought (default 1): the license gets the plan's maxMachines × quantity slots. */
  quantity?: number;
  /**
   * A subscription's paid period end (epoch ms), as the payment names it; the license expires
   * then plus the plan's graceDays. Without it the period is the plan's durationDays from now.
   */
  periodEndsAt?: number | null;
  customerName?: string | null;
  customerEmail?: string | null;
  /** The order's id, unique per product (EXTERNAL_ID_TAKEN on a second license with it). */
  externalId?: string | null;
  note?: string | null;
  licenseKey?: string;
}

/**
 * The settings a license made from `plan` gets, at `now`: the plan's edition and features, its
 * slots × quantity, an expiry from its duration (a subscription's: the paid period's end plus its
 * grace; a perpetual plan's: none) and the end of its updates window. Pure: the plan is read
 * once, and a later change to it changes no license made before.
 */
export function licenseSettingsFromPlan(
  plan: Plan,
  purchase: PlanPurchase = {},
  now = Date.now(),
): CreateLicenseInput & { planId: string; updatesUntil: number | null } {
  const quantity = purchase.quantity ?? 1;
  if (!Number.isSafeInteger(quantity) || quantity < 1 || quantity > planRanges.maxQuantity) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `quantity must be a whole number from 1 to ${planRanges.maxQuantity}`,
      { field: "quantity" },
    );
  }
  const maxMachines = plan.maxMachines * quantity;
  if (maxMachines > limits.maxMachines) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `quantity gives more than ${limits.maxMachines} machines`,
      { field: "quantity" },
    );
  }
  return {
    productSlug: plan.product,
    planId: plan.id,
    edition: plan.edition,
    editionName: plan.editionName,
    features: plan.features,
    maxMachines,
    expiresAt: planExpiry(plan, now, purchase.periodEndsAt ?? null),
    updatesUntil: plan.updatesWindowDays === null ? null : now + plan.updatesWindowDays * dayMs,
    ...(purchase.customerName === undefined ? {} : { customerName: purchase.customerName }),
    ...(purchase.customerEmail === undefined ? {} : { customerEmail: purchase.customerEmail }),
    ...(purchase.externalId === undefined ? {} : { externalId: purchase.externalId }),
    ...(purchase.note === undefined ? {} : { note: purchase.note }),
    ...(purchase.licenseKey === undefined ? {} : { licenseKey: purchase.licenseKey }),
  };
}

/**
 * When a license of `plan` expires (epoch ms; null: never). A subscription's: the paid period's
 * end (`periodEndsAt`, else durationDays from `now`) plus graceDays, also for a renewal. Any
 * other plan's: durationDays from `now`, or never.
 */
export function planExpiry(plan: Plan, now: number, periodEndsAt: number | null = null) {
  if (plan.subscription) {
    const periodEnd = periodEndsAt ?? now + (plan.durationDays ?? 0) * dayMs;
    return periodEnd + plan.graceDays * dayMs;
  }
  return plan.durationDays === null ? null : now + plan.durationDays * dayMs;
}

/** What a full refund or a chargeback does under the plan (no plan: the defaults). */
export function reactionOf(plan: Plan | null, event: "refund" | "chargeback") {
  if (plan === null) return defaultReactions[event];
  return event === "refund" ? plan.onRefund : plan.onChargeback;
}

/** The license status a full refund or a chargeback leads to under the plan; null: unchanged. */
export function statusAfter(plan: Plan | null, event: "refund" | "chargeback") {
  const reaction = reactionOf(plan, event);
  return reaction === "revoke" ? "REVOKED" : reaction === "suspend" ? "SUSPENDED" : null;
}

/**
 * A license made from the plan with id `planId` (licenseSettingsFromPlan), remembering it. 404
 * PLAN_NOT_FOUND for an unknown id, 409 PLAN_ARCHIVED for an archived plan.
 */
export async function createLicenseFromPlan(
  db: Kysely<DB>,
  planId: string,
  purchase: PlanPurchase = {},
  now = Date.now(),
): Promise<LicenseView> {
  const plan = await findPlanById(db, planId);
  if (!plan) throw new ShipkeyError("PLAN_NOT_FOUND", `No plan with id "${planId}"`);
  if (plan.archivedAt !== null) {
    throw new ShipkeyError(
      "PLAN_ARCHIVED",
      `Plan "${plan.slug}" of "${plan.product}" is archived and makes no new license`,
    );
  }
  return createLicense(db, licenseSettingsFromPlan(plan, purchase, now), now);
}
