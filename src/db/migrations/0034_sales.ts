import type { Kysely } from "kysely";

/**
 * - integration_prices: what a provider's price (Stripe price_…, Paddle pri_…, a Lemon Squeezy
 *   variant id) sells: a plan, and whether a quantity means seats (one license, the plan's slots
 *   times the quantity) or that many licenses.
 * - integration_orders: each paid order (a Checkout Session, a Paddle transaction, a Lemon
 *   Squeezy order) once, by the provider's id: its licenses (a JSON array of license ids), its
 *   customer, its subscription and the payment it was paid with (Stripe's payment_intent, which
 *   refunds and disputes name), the checkout that started a subscription (Stripe's cs_…, which
 *   the thank-you page names), its state, and the provider's time of the last change applied
 *   to it (an older one arriving later is ignored).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("integration_prices")
    .addColumn("integration_id", "varchar(64)", (c) =>
      c.notNull().references("integrations.id").onDelete("cascade"),
    )
    .addColumn("price_id", "varchar(255)", (c) => c.notNull())
    .addColumn("plan_id", "varchar(64)", (c) => c.notNull())
    .addColumn("quantity_means", "varchar(16)", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("integration_prices_pk", ["integration_id", "price_id"])
    .execute();
  await db.schema
    .createTable("integration_orders")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("integration_id", "varchar(64)", (c) =>
      c.notNull().references("integrations.id").onDelete("cascade"),
    )
    .addColumn("order_id", "varchar(255)", (c) => c.notNull())
    .addColumn("subscription_id", "varchar(255)")
    .addColumn("payment_id", "varchar(255)")
    .addColumn("checkout_id", "varchar(255)")
    .addColumn("plan_id", "varchar(64)", (c) => c.notNull())
    .addColumn("license_ids", "text", (c) => c.notNull())
    .addColumn("customer_email", "varchar(255)")
    .addColumn("customer_name", "varchar(255)")
    .addColumn("state", "varchar(16)", (c) => c.notNull())
    .addColumn("period_end", "bigint")
    .addColumn("applied_at", "bigint", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("integration_orders_order_idx")
    .on("integration_orders")
    .columns(["integration_id", "order_id"])
    .unique()
    .execute();
  await db.schema
    .createIndex("integration_orders_subscription_idx")
    .on("integration_orders")
    .columns(["integration_id", "subscription_id"])
    .execute();
  await db.schema
    .createIndex("integration_orders_checkout_idx")
    .on("integration_orders")
    .column("checkout_id")
    .execute();
  await db.schema
    .createIndex("integration_orders_payment_idx")
    .on("integration_orders")
    .columns(["integration_id", "payment_id"])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("integration_orders").execute();
  await db.schema.dropTable("integration_prices").execute();
}
