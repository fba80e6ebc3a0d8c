import type { EventHandlers } from "../../domain/integrations/process-event.js";
import { ignored, processed } from "../../domain/integrations/process-event.js";
import {
  disputeOrder,
  endSubscription,
  fulfilOrder,
  linkCheckout,
  paymentFailed,
  refundOrder,
  renewSubscription,
} from "../sales.js";
import { idOf, list, num, obj, quantityOf, seconds, str } from "./read.js";

/** The Checkout Session's (or Payment Link's) metadata key naming the plan of a one-time sale. */
export const planMetadataKey = "shipkey_plan";
/** Its quantity (default 1), the license's seats. */
export const quantityMetadataKey = "shipkey_quantity";

/** Stripe's events (docs/selling.md#stripe). */
export function stripeHandlers(): EventHandlers {
  const checkoutPaid: EventHandlers[string] = async (trx, context) => {
    const session = context.event.object;
    if (str(session.mode) === "subscription") {
      // Its licenses come with the first invoice.paid; the checkout is linked to them.
      const subscriptionId = idOf(session.subscription);
      if (subscriptionId === null)
        return ignored("a subscription's checkout without a subscription");
      return linkCheckout(trx, context, {
        checkoutId: context.event.objectId ?? "",
        subscriptionId,
      });
    }
    const paymentStatus = str(session.payment_status);
    if (paymentStatus !== "paid" && paymentStatus !== "no_payment_required") {
      return ignored(
        `unpaid order (payment_status ${paymentStatus ?? "absent"}): its licenses come with checkout.session.async_payment_succeeded`,
      );
    }
    const metadata = obj(session.metadata);
    const planId = str(metadata[planMetadataKey]);
    if (planId === null) {
      return ignored(`no plan: the Checkout Session's metadata has no ${planMetadataKey}`);
    }
    const details = obj(session.customer_details);
    return fulfilOrder(trx, context, {
      orderId: context.event.objectId ?? "",
      subscriptionId: null,
      paymentId: idOf(session.payment_intent),
      plan: { planId, quantityMeans: "seats" },
      items: [],
      quantity: quantityOf(metadata[quantityMetadataKey]),
      customerEmail: str(details.email) ?? str(session.customer_email),
      customerName: str(details.name),
      periodEndsAt: null,
    });
  };

  return {
    "checkout.session.completed": checkoutPaid,
    "checkout.session.async_payment_succeeded": checkoutPaid,
    "invoice.paid": async (trx, context) => {
      const invoice = context.event.object;
      const subscriptionId =
        idOf(obj(obj(invoice.parent).subscription_details).subscription) ??
        idOf(invoice.subscription);
      if (subscriptionId === null) return processed("an invoice of no subscription");
      const lines = list(obj(invoice.lines).data);
      const periodEndsAt =
        Math.max(0, ...lines.map((l) => seconds(obj(l.period).end) ?? 0)) || null;
      const reason = str(invoice.billing_reason);
      if (reason === "subscription_create") {
        return fulfilOrder(trx, context, {
          orderId: context.event.objectId ?? "",
          subscriptionId,
          paymentId: idOf(invoice.payment_intent),
          plan: null,
          items: lines.map((line) => ({
            priceId: idOf(obj(obj(line.pricing).price_details).price) ?? idOf(line.price) ?? "",
            quantity: quantityOf(line.quantity),
          })),
          quantity: 1,
          customerEmail: str(invoice.customer_email),
          customerName: str(invoice.customer_name),
          periodEndsAt,
        });
      }
      if (periodEndsAt === null) return ignored("an invoice without a period end");
      return renewSubscription(trx, context, { subscriptionId, periodEndsAt });
    },
    "invoice.payment_failed": async (trx, context) => {
      const invoice = context.event.object;
      const subscriptionId =
        idOf(obj(obj(invoice.parent).subscription_details).subscription) ??
        idOf(invoice.subscription);
      if (subscriptionId === null) return processed("an invoice of no subscription");
      return paymentFailed(trx, context, subscriptionId);
    },
    "customer.subscription.updated": async (_trx, context) => {
      const subscription = context.event.object;
      if (subscription.cancel_at_period_end === true) {
        return processed("cancelled at the period's end: the license is left to expire");
      }
      return processed(`subscription ${str(subscription.status) ?? ""}: no license changed`);
    },
    "customer.subscription.deleted": async (trx, context) => {
      const subscription = context.event.object;
      return endSubscription(trx, context, {
        subscriptionId: context.event.objectId ?? "",
        endedAt: seconds(subscription.ended_at) ?? context.now,
      });
    },
    "charge.refunded": async (trx, context) => {
      const charge = context.event.object;
      const amount = num(charge.amount) ?? 0;
      const refunded = num(charge.amount_refunded) ?? 0;
      const paymentId = idOf(charge.payment_intent);
      if (paymentId === null) return ignored("a refund of a charge without a payment_intent");
      return refundOrder(trx, context, {
        paymentId,
        full: charge.refunded === true || refunded >= amount,
      });
    },
    "charge.dispute.created": async (trx, context) => {
      const paymentId = idOf(context.event.object.payment_intent);
      if (paymentId === null) return ignored("a dispute without a payment_intent");
      return disputeOrder(trx, context, { paymentId, outcome: "opened" });
    },
    "charge.dispute.closed": async (trx, context) => {
      const dispute = context.event.object;
      const paymentId = idOf(dispute.payment_intent);
      if (paymentId === null) return ignored("a dispute without a payment_intent");
      const status = str(dispute.status);
      if (status !== "won" && status !== "lost")
        return processed(`dispute closed: ${status ?? ""}`);
      return disputeOrder(trx, context, { paymentId, outcome: status });
    },
  };
}
