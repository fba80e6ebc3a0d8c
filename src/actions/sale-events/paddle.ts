import type { EventHandlers } from "../../domain/integrations/process-event.js";
import { ignored, processed } from "../../domain/integrations/process-event.js";
import {
  disputeOrder,
  endSubscription,
  fulfilOrder,
  paymentFailed,
  refundOrder,
  renewSubscription,
} from "../sales.js";
import { idOf, iso, list, obj, quantityOf, str } from "./read.js";

/** Paddle Billing's events (docs/selling.md#paddle-billing). */
export function paddleHandlers(): EventHandlers {
  return {
    "transaction.completed": async (trx, context) => {
      const transaction = context.event.object;
      const subscriptionId = str(transaction.subscription_id);
      const periodEndsAt = iso(obj(transaction.billing_period).ends_at);
      if (str(transaction.origin) === "subscription_recurring" && subscriptionId !== null) {
        if (periodEndsAt === null) return ignored("a renewal without billing_period.ends_at");
        return renewSubscription(trx, context, { subscriptionId, periodEndsAt });
      }
      const customer = obj(transaction.customer);
      const custom = obj(transaction.custom_data);
      return fulfilOrder(trx, context, {
        orderId: context.event.objectId ?? "",
        subscriptionId,
        paymentId: context.event.objectId,
        plan: null,
        items: list(transaction.items).map((item) => ({
          priceId: str(item.price_id) ?? idOf(item.price) ?? "",
          quantity: quantityOf(item.quantity),
        })),
        quantity: 1,
        customerEmail: str(customer.email) ?? str(custom.email),
        customerName: str(customer.name) ?? str(custom.name),
        periodEndsAt,
      });
    },
    "transaction.payment_failed": async (trx, context) => {
      const subscriptionId = str(context.event.object.subscription_id);
      if (subscriptionId === null) return processed("a failed payment of no subscription");
      return paymentFailed(trx, context, subscriptionId);
    },
    "subscription.canceled": async (trx, context) =>
      endSubscription(trx, context, {
        subscriptionId: context.event.objectId ?? "",
        endedAt: iso(context.event.object.canceled_at) ?? context.now,
      }),
    "adjustment.created": (trx, context) => adjustment(trx, context),
    "adjustment.updated": (trx, context) => adjustment(trx, context),
  };

  async function adjustment(...[trx, context]: Parameters<EventHandlers[string]>) {
    const adjustment = context.event.object;
    const action = str(adjustment.action);
    const status = str(adjustment.status);
    const orderId = str(adjustment.transaction_id) ?? undefined;
    if (action === "refund") {
      // A refund counts only once approved.
      if (status !== "approved") return processed(`a refund ${status ?? ""}: waits for approval`);
      return refundOrder(trx, context, { orderId, full: str(adjustment.type) === "full" });
    }
    if (action === "chargeback") return disputeOrder(trx, context, { orderId, outcome: "opened" });
    if (action === "chargeback_reverse")
      return disputeOrder(trx, context, { orderId, outcome: "won" });
    return processed(`an adjustment (${action ?? "no action"}): no license changed`);
  }
}
