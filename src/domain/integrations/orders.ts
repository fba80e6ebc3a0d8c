import type { Kysely, Selectable } from "kysely";
import type { DB, IntegrationOrdersTable } from "../../db/schema.js";
import type { OrderState } from "../../contracts/vocabulary.js";
import type { EventContext } from "./process-event.js";

export type OrderRow = Selectable<IntegrationOrdersTable>;

/** A paid order of the integration, by the provider's id. */
export function findOrder(trx: Kysely<DB>, integrationId: string, orderId: string) {
  return trx
    .selectFrom("integration_orders")
    .selectAll()
    .where("integration_id", "=", integrationId)
    .where("order_id", "=", orderId)
    .executeTakeFirst();
}

/** A subscription's order (its first). */
export function findSubscription(trx: Kysely<DB>, context: EventContext, subscriptionId: string) {
  return trx
    .selectFrom("integration_orders")
    .selectAll()
    .where("integration_id", "=", context.integration.id)
    .where("subscription_id", "=", subscriptionId)
    .orderBy("created_at")
    .executeTakeFirst();
}

/** An order by the provider's order id or by the payment it was paid with. */
export async function findOrderBy(
  trx: Kysely<DB>,
  context: EventContext,
  by: { orderId?: string; paymentId?: string },
): Promise<OrderRow | undefined> {
  if (by.orderId !== undefined) return findOrder(trx, context.integration.id, by.orderId);
  if (by.paymentId === undefined) return undefined;
  return trx
    .selectFrom("integration_orders")
    .selectAll()
    .where("integration_id", "=", context.integration.id)
    .where("payment_id", "=", by.paymentId)
    .executeTakeFirst();
}

/** An order's change applied: its state or period, and the provider's time of the change. */
export async function touchOrder(
  trx: Kysely<DB>,
  context: EventContext,
  order: OrderRow,
  changes: { state?: OrderState; period_end?: number },
): Promise<void> {
  await trx
    .updateTable("integration_orders")
    .set({
      ...changes,
      applied_at: Math.max(order.applied_at, context.event.occurredAt ?? context.now),
      updated_at: context.now,
    })
    .where("id", "=", order.id)
    .execute();
}
