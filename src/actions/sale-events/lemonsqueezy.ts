import type { EventHandlers } from "../../domain/integrations/process-event.js";
import { ignored, processed } from "../../domain/integrations/process-event.js";
import {
  endSubscription,
  fulfilOrder,
  paymentFailed,
  refundOrder,
  renewSubscription,
} from "../sales.js";
import { idOf, iso, num, obj, quantityOf, str } from "./read.js";

/** Lemon Squeezy's events (docs/selling.md#lemon-squeezy). */
export function lemonSqueezyHandlers(): EventHandlers {
  const attributes = (context: Parameters<EventHandlers[string]>[1]) =>
    obj(context.event.object.attributes);
  const renewal: EventHandlers[string] = async (trx, context) => {
    const subscription = attributes(context);
    const status = str(subscription.status);
    if (status === "expired") {
      return endSubscription(trx, context, {
        subscriptionId: context.event.objectId ?? "",
        endedAt: iso(subscription.ends_at) ?? context.now,
      });
    }
    const periodEndsAt = iso(subscription.renews_at);
    if ((status !== "active" && status !== "on_trial") || periodEndsAt === null) {
      return processed(`subscription ${status ?? ""}: no license changed`);
    }
    const orderId = idOf(subscription.order_id);
    // The subscription's first event links it to its order.
    if (orderId !== null) {
      await trx
        .updateTable("integration_orders")
        .set({ subscription_id: context.event.objectId })
        .where("integration_id", "=", context.integration.id)
        .where("order_id", "=", orderId)
        .where("subscription_id", "is", null)
        .execute();
    }
    return renewSubscription(trx, context, {
      subscriptionId: context.event.objectId ?? "",
      periodEndsAt,
    });
  };
  return {
    order_created: async (trx, context) => {
      const order = attributes(context);
      if (str(order.status) !== "paid") {
        return ignored(`unpaid order (status ${str(order.status) ?? "absent"})`);
      }
      const item = obj(order.first_order_item);
      return fulfilOrder(trx, context, {
        orderId: context.event.objectId ?? "",
        subscriptionId: null,
        paymentId: null,
        plan: null,
        items: [{ priceId: idOf(item.variant_id) ?? "", quantity: quantityOf(item.quantity) }],
        quantity: 1,
        customerEmail: str(order.user_email),
        customerName: str(order.user_name),
        periodEndsAt: null,
      });
    },
    order_refunded: async (trx, context) => {
      const order = attributes(context);
      const total = num(order.total) ?? 0;
      const refunded = num(order.refunded_amount) ?? 0;
      return refundOrder(trx, context, {
        orderId: context.event.objectId ?? "",
        full: refunded >= total,
      });
    },
    subscription_created: renewal,
    subscription_updated: renewal,
    subscription_cancelled: async () =>
      processed("cancelled: the license is left to expire at the period's end"),
    subscription_expired: async (trx, context) =>
      endSubscription(trx, context, {
        subscriptionId: context.event.objectId ?? "",
        endedAt: iso(attributes(context).ends_at) ?? context.now,
      }),
    subscription_payment_failed: async (trx, context) => {
      const subscriptionId = idOf(attributes(context).subscription_id);
      if (subscriptionId === null) return ignored("a failed payment of no subscription");
      return paymentFailed(trx, context, subscriptionId);
    },
  };
}
