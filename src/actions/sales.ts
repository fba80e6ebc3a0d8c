import type { Transaction } from "kysely";
import type { DB } from "../db/schema.js";
import {
  findOrder,
  findOrderBy,
  findSubscription,
  type OrderRow,
  touchOrder,
} from "../domain/integrations/orders.js";
import { type Actor, recordAudit } from "../domain/audit/audit-log.js";
import { findPriceMapping } from "../domain/integrations/prices.js";
import {
  type EventContext,
  ignored,
  type Outcome,
  processed,
} from "../domain/integrations/process-event.js";
import { enqueueLicenseDelivered, enqueuePaymentFailed } from "../domain/email/messages.js";
import { queueMessage } from "./sale-messages.js";
import { findLicenseView } from "../domain/licenses/license-views.js";
import { licenseIdOfKey } from "../domain/licenses/license-record.js";
import { planExpiry, reactionOf, statusAfter } from "../domain/plans/license-from-plan.js";
import { findPlanById } from "../domain/plans/plans.js";
import { emitWebhookEvent } from "../domain/webhooks/events.js";
import { newId } from "../lib/ids.js";
import { isoOrNull } from "../lib/time.js";
import { setLicenseStatus, updateLicense } from "./licenses.js";
import { createLicenseFromPlan } from "./plans.js";
import type { License } from "../contracts/licenses.js";
import type { LicenseStatus, WebhookEventType } from "../contracts/vocabulary.js";

// A sale's effects on licenses, each idempotent on the provider's object and each with its audit
// entry (actor: the integration, as "service") and its webhook event, in the event's
// transaction. The provider handlers (sale-events/) read their events into these calls.

/** The integration acting: audit entries name it. */
export const integrationActor = (context: EventContext): Actor => ({
  type: "service",
  id: context.integration.id,
  label: `${context.integration.provider} integration ${context.integration.id}`,
  ip: null,
});

export interface PaidOrder {
  orderId: string;
  subscriptionId: string | null;
  paymentId: string | null;
  /** The plan, named by the order (Stripe Checkout's metadata) or by a mapped price. */
  plan: { planId: string; quantityMeans: "seats" | "licenses" } | null;
  /** The prices bought, the first mapped one decides the plan (when plan is null). */
  items: Array<{ priceId: string; quantity: number }>;
  /** The quantity when the plan is named by the order. */
  quantity: number;
  customerEmail: string | null;
  customerName: string | null;
  periodEndsAt: number | null;
}

/**
 * A paid order: its licenses from the plan, the customer's message and order.paid, once per
 * order id (a second event about the same order, such as Stripe's async_payment_succeeded after
 * completed, changes nothing).
 */
export async function fulfilOrder(
  trx: Transaction<DB>,
  context: EventContext,
  order: PaidOrder,
): Promise<Outcome> {
  const { integration, now } = context;
  if (await findOrder(trx, integration.id, order.orderId)) {
    return processed(`order ${order.orderId} was fulfilled already`);
  }
  let choice = order.plan === null ? null : { ...order.plan, quantity: order.quantity };
  if (choice === null) {
    for (const item of order.items) {
      const mapping = await findPriceMapping(trx, integration.id, item.priceId);
      if (mapping) {
        choice = {
          planId: mapping.plan_id,
          quantityMeans: mapping.quantity_means,
          quantity: item.quantity,
        };
        break;
      }
    }
  }
  if (choice === null) {
    const prices = order.items.map((item) => item.priceId).join(", ") || "none";
    return ignored(`no plan: no price of order ${order.orderId} is mapped (prices: ${prices})`);
  }
  const plan = await findPlanById(trx, choice.planId);
  if (plan === null || plan.product !== integration.product_slug) {
    return ignored(`plan ${choice.planId} does not exist for product ${integration.product_slug}`);
  }
  const quantity = Math.max(1, Math.floor(choice.quantity));
  const count = choice.quantityMeans === "licenses" ? quantity : 1;
  const actor = integrationActor(context);
  const licenses: License[] = [];
  const externalIds: string[] = [];
  for (let i = 0; i < count; i++) {
    const externalId = i === 0 ? order.orderId : `${order.orderId}/${i + 1}`;
    externalIds.push(externalId);
    licenses.push(
      await createLicenseFromPlan(trx, actor, plan.id, {
        quantity: choice.quantityMeans === "seats" ? quantity : 1,
        periodEndsAt: plan.subscription ? order.periodEndsAt : null,
        customerName: order.customerName,
        customerEmail: order.customerEmail,
        externalId,
      }),
    );
  }
  const ids = await Promise.all(licenses.map((l) => licenseIdOfKey(trx, l.licenseKey)));
  const row: OrderRow = {
    id: newId("ord", now),
    integration_id: integration.id,
    order_id: order.orderId,
    subscription_id: order.subscriptionId,
    payment_id: order.paymentId,
    checkout_id: null,
    plan_id: plan.id,
    license_ids: JSON.stringify(ids),
    customer_email: order.customerEmail,
    customer_name: order.customerName,
    state: "paid",
    period_end: order.periodEndsAt,
    applied_at: context.event.occurredAt ?? now,
    created_at: now,
    updated_at: now,
  };
  await trx.insertInto("integration_orders").values(row).execute();
  if (order.customerEmail !== null) {
    const customer = { email: order.customerEmail, name: order.customerName };
    for (const [i, license] of licenses.entries()) {
      // One message per license, keyed by the provider's order id (orderId/2… for the others).
      const cause = `${integration.id}:${externalIds[i] ?? order.orderId}`;
      await queueMessage(trx, enqueueLicenseDelivered, license, customer, cause);
    }
  }
  await announce(trx, context, "order.paid", "order.paid", row, licenses);
  return processed(`order ${order.orderId}: ${licenses.length} license(s) from plan ${plan.id}`);
}

/**
 * A subscription's renewal: each license runs to the new period's end plus the plan's grace. A
 * subscription not seen yet waits (retried for 24 h); a change older than the one applied is
 * ignored.
 */
export async function renewSubscription(
  trx: Transaction<DB>,
  context: EventContext,
  renewal: { subscriptionId: string; periodEndsAt: number },
): Promise<Outcome> {
  const order = await findSubscription(trx, context, renewal.subscriptionId);
  if (!order) return waitingFor(renewal.subscriptionId);
  if (isOlder(context, order)) return olderThanApplied(order);
  const plan = await findPlanById(trx, order.plan_id);
  // A subscription plan's licenses run to the period's end plus its grace (planExpiry).
  const expiresAt =
    (plan?.subscription ? planExpiry(plan, context.now, renewal.periodEndsAt) : null) ??
    renewal.periodEndsAt;
  const licenses = await updateLicenses(trx, context, order, { expiresAt });
  await touchOrder(trx, context, order, { period_end: renewal.periodEndsAt });
  await announce(trx, context, "license.renewed", "order.renewed", order, licenses, {
    periodEndsAt: isoOrNull(renewal.periodEndsAt),
  });
  return processed(`subscription ${renewal.subscriptionId} renewed to ${isoOrNull(expiresAt)}`);
}

/** A failed payment changes no license: the customer's message and license.payment_failed. */
export async function paymentFailed(
  trx: Transaction<DB>,
  context: EventContext,
  subscriptionId: string,
): Promise<Outcome> {
  const order = await findSubscription(trx, context, subscriptionId);
  if (!order) return ignored(`subscription ${subscriptionId} is not one of this integration's`);
  const licenses = await licensesOf(trx, order);
  if (order.customer_email !== null) {
    const customer = { email: order.customer_email, name: order.customer_name };
    for (const license of licenses) {
      // Keyed by the provider's event id, one per license of the subscription.
      const cause = `${context.integration.id}:${context.event.key}:${license.licenseKey}`;
      await queueMessage(trx, enqueuePaymentFailed, license, customer, cause);
    }
  }
  await announce(trx, context, "license.payment_failed", "order.payment_failed", order, licenses);
  return processed(`payment failed on subscription ${subscriptionId}; no license changed`);
}

/** A subscription that ended: its licenses expire now (or at the end given). */
export async function endSubscription(
  trx: Transaction<DB>,
  context: EventContext,
  ended: { subscriptionId: string; endedAt: number },
): Promise<Outcome> {
  const order = await findSubscription(trx, context, ended.subscriptionId);
  if (!order)
    return ignored(`subscription ${ended.subscriptionId} is not one of this integration's`);
  if (isOlder(context, order)) return olderThanApplied(order);
  await updateLicenses(trx, context, order, { expiresAt: ended.endedAt });
  await touchOrder(trx, context, order, {});
  return processed(`subscription ${ended.subscriptionId} ended: its licenses expired`);
}

/** A full refund applies the plan's rule (revoke by default); a partial one is only noted. */
export async function refundOrder(
  trx: Transaction<DB>,
  context: EventContext,
  refund: { orderId?: string; paymentId?: string; full: boolean },
): Promise<Outcome> {
  const order = await findOrderBy(trx, context, refund);
  if (!order) return ignored("a refund of no order this integration fulfilled");
  if (!refund.full)
    return processed(`partial refund of order ${order.order_id} noted; nothing changed`);
  if (order.state === "refunded") return processed(`order ${order.order_id} was refunded already`);
  const plan = await findPlanById(trx, order.plan_id);
  const licenses = await applyRule(trx, context, order, statusAfter(plan, "refund"));
  await touchOrder(trx, context, order, { state: "refunded" });
  await announce(
    trx,
    context,
    "order.refunded",
    "order.refunded",
    { ...order, state: "refunded" },
    licenses,
  );
  return processed(`order ${order.order_id} refunded in full: ${reactionOf(plan, "refund")}`);
}

/** A chargeback applies the plan's rule (suspend by default); a won dispute reinstates. */
export async function disputeOrder(
  trx: Transaction<DB>,
  context: EventContext,
  dispute: { orderId?: string; paymentId?: string; outcome: "opened" | "won" | "lost" },
): Promise<Outcome> {
  const order = await findOrderBy(trx, context, dispute);
  if (!order) return ignored("a dispute of no order this integration fulfilled");
  if (dispute.outcome === "lost") return processed(`dispute of order ${order.order_id} lost`);
  if (dispute.outcome === "won") {
    if (order.state !== "disputed") return processed(`order ${order.order_id} is not disputed`);
    const licenses = await setStatuses(trx, context, order, "ACTIVE");
    await touchOrder(trx, context, order, { state: "paid" });
    await announce(
      trx,
      context,
      "order.disputed",
      "order.dispute_won",
      { ...order, state: "paid" },
      licenses,
    );
    return processed(`dispute of order ${order.order_id} won: licenses reinstated`);
  }
  if (order.state === "disputed") return processed(`order ${order.order_id} is disputed already`);
  const plan = await findPlanById(trx, order.plan_id);
  const licenses = await applyRule(trx, context, order, statusAfter(plan, "chargeback"));
  await touchOrder(trx, context, order, { state: "disputed" });
  await announce(
    trx,
    context,
    "order.disputed",
    "order.disputed",
    { ...order, state: "disputed" },
    licenses,
  );
  return processed(`order ${order.order_id} disputed: ${reactionOf(plan, "chargeback")}`);
}

const waitingFor = (subscriptionId: string): Outcome => ({
  status: "waiting",
  reason: `subscription ${subscriptionId} not seen yet: retried for 24 h`,
});

const isOlder = (context: EventContext, order: OrderRow) =>
  context.event.occurredAt !== null && context.event.occurredAt < order.applied_at;

const olderThanApplied = (order: OrderRow) =>
  ignored(
    `older than the change applied to order ${order.order_id} (${isoOrNull(order.applied_at)})`,
  );

async function licensesOf(trx: Transaction<DB>, order: OrderRow): Promise<License[]> {
  const ids = JSON.parse(order.license_ids) as string[];
  if (ids.length === 0) return [];
  const rows = await trx
    .selectFrom("licenses")
    .select("license_key")
    .where("id", "in", ids)
    .execute();
  const views = await Promise.all(rows.map((row) => findLicenseView(trx, row.license_key)));
  return views.filter((view): view is License => view !== null);
}

async function updateLicenses(
  trx: Transaction<DB>,
  context: EventContext,
  order: OrderRow,
  changes: { expiresAt: number },
): Promise<License[]> {
  const actor = integrationActor(context);
  const updated: License[] = [];
  for (const license of await licensesOf(trx, order)) {
    updated.push(await updateLicense(trx, actor, license.licenseKey, changes));
  }
  return updated;
}

async function setStatuses(
  trx: Transaction<DB>,
  context: EventContext,
  order: OrderRow,
  status: LicenseStatus,
): Promise<License[]> {
  const actor = integrationActor(context);
  const updated: License[] = [];
  for (const license of await licensesOf(trx, order)) {
    updated.push(await setLicenseStatus(trx, actor, license.licenseKey, status));
  }
  return updated;
}

/** The order's licenses set to `status` (the plan's reaction); null: left as they are. */
function applyRule(
  trx: Transaction<DB>,
  context: EventContext,
  order: OrderRow,
  status: LicenseStatus | null,
): Promise<License[]> {
  if (status === null) return licensesOf(trx, order);
  return setStatuses(trx, context, order, status);
}

/** The order's webhook event and its audit entry (target: the order). */
async function announce(
  trx: Transaction<DB>,
  context: EventContext,
  type: WebhookEventType,
  action: string,
  order: OrderRow,
  licenses: License[],
  extra: Record<string, unknown> = {},
): Promise<void> {
  const { integration, event } = context;
  const data = {
    order: {
      id: order.order_id,
      provider: integration.provider,
      integrationId: integration.id,
      subscriptionId: order.subscription_id,
      planId: order.plan_id,
      state: order.state,
      customerEmail: order.customer_email,
      customerName: order.customer_name,
    },
    licenses,
    ...extra,
  };
  await emitWebhookEvent(trx, { type, product: integration.product_slug, data });
  await recordAudit(
    trx,
    integrationActor(context),
    action,
    { type: "order", id: order.order_id },
    { integrationId: integration.id, eventId: event.key, licenses: licenses.length, ...extra },
  );
}

/**
 * The checkout that started a subscription, linked to its order so the thank-you page finds it
 * by the checkout's id; before the subscription's order exists it waits (retried for 24 h).
 */
export async function linkCheckout(
  trx: Transaction<DB>,
  context: EventContext,
  link: { checkoutId: string; subscriptionId: string },
): Promise<Outcome> {
  const result = await trx
    .updateTable("integration_orders")
    .set({ checkout_id: link.checkoutId })
    .where("integration_id", "=", context.integration.id)
    .where("subscription_id", "=", link.subscriptionId)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) return waitingFor(link.subscriptionId);
  return processed(`checkout ${link.checkoutId} of subscription ${link.subscriptionId}`);
}
