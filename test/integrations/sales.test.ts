import { createHmac, randomBytes } from "node:crypto";
import { sql } from "kysely";
import Stripe from "stripe";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { retryWaitingPaymentEvents } from "../../src/actions/integration-events.js";
import { connectPaymentProvider } from "../../src/actions/integrations.js";
import { createPlan } from "../../src/actions/plans.js";
import type { IntegrationProvider } from "../../src/contracts/vocabulary.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

const masterKey = randomBytes(32);
const cli = { type: "cli" as const, id: null, label: "test", ip: null };
const start = Date.parse("2026-12-01T12:00:00Z");
const day = 86_400_000;

describe.each(dialects)("payment integrations: what each event does (%s)", (dialect) => {
  let f: Fixture;
  let apiKey: string;
  let now = start;
  // Real plans: 2 slots each; the subscription's period 30 days, its grace 3 days.
  const plan = { once: "", sub: "" };
  const mails = () =>
    f.db
      .selectFrom("email_messages")
      .select(["kind", "to_address as email", "idempotency_key as key", "license_id"])
      .orderBy("created_at")
      .orderBy("id")
      .execute();

  beforeAll(async () => {
    f = await createFixture(dialect, { masterKey, integrations: { now: () => now } });
    apiKey = (await adminAccess(f, "sales@example.com")).apiKey;
    const terms = {
      maxMachines: 2,
      graceDays: 3,
      onRefund: "revoke",
      onChargeback: "suspend",
    } as const;
    plan.once = (
      await createPlan(f.db, cli, f.product.slug, {
        slug: "once",
        name: "Once",
        edition: "pro",
        ...terms,
      })
    ).id;
    plan.sub = (
      await createPlan(f.db, cli, f.product.slug, {
        slug: "monthly",
        name: "Monthly",
        subscription: true,
        durationDays: 30,
        ...terms,
      })
    ).id;
  });
  afterAll(async () => {
    await f.close();
  });
  beforeEach(async () => {
    now = start;
    await f.db.deleteFrom("integrations").execute();
    await f.db.deleteFrom("email_messages").execute();
    await f.db.deleteFrom("licenses").execute();
  });

  async function integration(provider: IntegrationProvider, secret: string) {
    return (
      await connectPaymentProvider(
        f.db,
        cli,
        masterKey,
        { product: f.product.slug, provider, secret },
        "",
      )
    ).id;
  }

  let counter = 0;
  async function stripe(id: string, type: string, object: Record<string, unknown>, created = now) {
    const body = JSON.stringify({
      id: `evt_${++counter}`,
      type,
      livemode: true,
      created: Math.floor(created / 1000),
      data: { object },
    });
    const header = Stripe.webhooks.generateTestHeaderString({
      payload: body,
      secret: "whsec_sales",
      timestamp: Math.floor(now / 1000),
    });
    const response = await f.app.inject({
      method: "POST",
      url: `/api/integrations/stripe/${id}/webhook`,
      headers: { "content-type": "application/json", "stripe-signature": header },
      payload: body,
    });
    expect(response.statusCode, response.body).toBe(200);
    const row = await f.db
      .selectFrom("integration_events")
      .selectAll()
      .where("event_key", "=", `evt_${counter}`)
      .executeTakeFirstOrThrow();
    return row;
  }

  const licenses = () =>
    f.db
      .selectFrom("licenses")
      .selectAll()
      .where("product_id", "=", f.product.id)
      .orderBy("external_id")
      .execute();

  const session = (extra: Record<string, unknown> = {}) => ({
    id: "cs_test_1",
    object: "checkout.session",
    mode: "payment",
    payment_status: "paid",
    payment_intent: "pi_1",
    metadata: { shipkey_plan: plan.once, shipkey_quantity: "3" },
    customer_details: { email: "ada@example.com", name: "Ada Lovelace" },
    ...extra,
  });

  it("Stripe Checkout: a paid session makes its license once, with the customer and the order id", async () => {
    const id = await integration("stripe", "whsec_sales");
    const first = await stripe(id, "checkout.session.completed", session());
    expect(first).toMatchObject({ status: "processed" });
    const again = await stripe(id, "checkout.session.async_payment_succeeded", session());
    expect(again.reason).toBe("order cs_test_1 was fulfilled already");
    const rows = await licenses();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      external_id: "cs_test_1",
      customer_email: "ada@example.com",
      customer_name: "Ada Lovelace",
      max_machines: 6,
      edition: "pro",
      plan_id: plan.once,
      expires_at: null,
    });
    // One message for the order, though the order's events came twice.
    expect(await mails()).toEqual([
      {
        kind: "license_delivered",
        email: "ada@example.com",
        key: `license_delivered:${id}:cs_test_1`,
        license_id: rows[0]?.id,
      },
    ]);
    const audit = await f.db
      .selectFrom("audit_log")
      .select(["action", "actor_type", "actor_id"])
      .where("actor_id", "=", id)
      .orderBy("at")
      .execute();
    expect(audit.map((a) => a.action)).toEqual(["license.create", "order.paid"]);
    expect(audit[0]?.actor_type).toBe("service");
  });

  it("Stripe Checkout: unpaid, or without the plan in its metadata, is ignored with why", async () => {
    const id = await integration("stripe", "whsec_sales");
    const unpaid = await stripe(
      id,
      "checkout.session.completed",
      session({ payment_status: "unpaid" }),
    );
    expect(unpaid.status).toBe("ignored");
    expect(unpaid.reason).toContain("unpaid order");
    const noPlan = await stripe(id, "checkout.session.completed", session({ metadata: {} }));
    expect(noPlan.reason).toBe("no plan: the Checkout Session's metadata has no shipkey_plan");
    const unknown = await stripe(
      id,
      "checkout.session.completed",
      session({ metadata: { shipkey_plan: "pln_x" } }),
    );
    expect(unknown.reason).toContain("plan pln_x does not exist");
    // Paid later: the async success makes the license.
    const paid = await stripe(id, "checkout.session.async_payment_succeeded", session());
    expect(paid.status).toBe("processed");
    expect(await licenses()).toHaveLength(1);
  });

  const invoice = (reason: string, periodEnd: number, extra: Record<string, unknown> = {}) => ({
    id: `in_${reason}_${periodEnd}`,
    object: "invoice",
    billing_reason: reason,
    customer_email: "bob@example.com",
    customer_name: "Bob",
    parent: { subscription_details: { subscription: "sub_1" } },
    lines: {
      data: [
        {
          quantity: 2,
          period: { end: Math.floor(periodEnd / 1000) },
          pricing: { price_details: { price: "price_monthly" } },
        },
      ],
    },
    ...extra,
  });

  it("Stripe subscriptions: invoice.paid by mapped price, renewals, refunds, disputes, the end", async () => {
    const id = await integration("stripe", "whsec_sales");
    const admin = (method: "PUT" | "GET" | "POST", url: string, body?: unknown) =>
      callWithApiKey(f, apiKey, method, url, body);
    // A renewal before its subscription is known waits.
    const early = await stripe(
      id,
      "invoice.paid",
      invoice("subscription_cycle", start + 60 * day),
      start + day,
    );
    expect(early).toMatchObject({ status: "waiting" });
    // Before the price is mapped: ignored; after, a replay makes the license.
    const first = await stripe(
      id,
      "invoice.paid",
      invoice("subscription_create", start + 30 * day),
      start,
    );
    expect(first.status).toBe("ignored");
    expect(first.reason).toContain("price_monthly");
    const mapped = await admin("PUT", `/api/admin/integrations/${id}/prices/price_monthly`, {
      planId: plan.sub,
    });
    expect(mapped.statusCode, mapped.body).toBe(200);
    expect(mapped.json()).toMatchObject({
      priceId: "price_monthly",
      planId: plan.sub,
      quantityMeans: "seats",
    });
    const replay = await admin("POST", `/api/admin/integrations/${id}/events/${first.id}/replay`);
    expect(replay.json()).toMatchObject({ status: "processed" });
    let [license] = await licenses();
    expect(license).toMatchObject({
      max_machines: 4,
      plan_id: plan.sub,
      expires_at: start + 33 * day,
      external_id: first.object_id,
    });

    // The waiting renewal is retried once its subscription is known.
    now = start + 2 * 60 * 60_000;
    expect(await retryWaitingPaymentEvents(f.db, now)).toBe(1);
    [license] = await licenses();
    expect(license?.expires_at).toBe(start + 63 * day);
    // An older renewal arriving late changes nothing.
    const stale = await stripe(
      id,
      "invoice.paid",
      invoice("subscription_cycle", start + 40 * day),
      start + day / 2,
    );
    expect(stale.status).toBe("ignored");
    expect(stale.reason).toContain("older than the change applied");
    expect((await licenses())[0]?.expires_at).toBe(start + 63 * day);

    // A failed payment changes nothing but sends the message.
    const failed = await stripe(
      id,
      "invoice.payment_failed",
      invoice("subscription_cycle", start + 90 * day),
      start + 3 * day,
    );
    expect(failed.status).toBe("processed");
    expect((await mails()).map((m) => m.kind)).toEqual(["license_delivered", "payment_failed"]);
    expect((await licenses())[0]?.expires_at).toBe(start + 63 * day);

    // A cancellation at the period's end leaves it; the subscription's end expires it.
    await stripe(
      id,
      "customer.subscription.updated",
      { id: "sub_1", cancel_at_period_end: true },
      start + 4 * day,
    );
    expect((await licenses())[0]?.expires_at).toBe(start + 63 * day);
    const ended = await stripe(
      id,
      "customer.subscription.deleted",
      { id: "sub_1", ended_at: Math.floor((start + 5 * day) / 1000) },
      start + 5 * day,
    );
    expect(ended.status).toBe("processed");
    expect((await licenses())[0]?.expires_at).toBe(start + 5 * day);
  });

  it("Stripe refunds and disputes: a partial refund is noted, a chargeback suspends, a win reinstates", async () => {
    const id = await integration("stripe", "whsec_sales");
    await stripe(id, "checkout.session.completed", session());
    const partial = await stripe(id, "charge.refunded", {
      id: "ch_1",
      payment_intent: "pi_1",
      amount: 1000,
      amount_refunded: 300,
      refunded: false,
    });
    expect(partial.reason).toContain("partial refund");
    expect((await licenses())[0]?.status).toBe("ACTIVE");
    await stripe(id, "charge.dispute.created", {
      id: "dp_1",
      payment_intent: "pi_1",
      status: "needs_response",
    });
    expect((await licenses())[0]?.status).toBe("SUSPENDED");
    await stripe(id, "charge.dispute.closed", {
      id: "dp_1",
      payment_intent: "pi_1",
      status: "won",
    });
    expect((await licenses())[0]?.status).toBe("ACTIVE");
    const full = await stripe(id, "charge.refunded", {
      id: "ch_1",
      payment_intent: "pi_1",
      amount: 1000,
      amount_refunded: 1000,
      refunded: true,
    });
    expect(full.reason).toBe("order cs_test_1 refunded in full: revoke");
    expect((await licenses())[0]?.status).toBe("REVOKED");
    const actions = await f.db
      .selectFrom("audit_log")
      .select("action")
      .where("target_id", "=", "cs_test_1")
      .where("actor_id", "=", id)
      .orderBy("at")
      .execute();
    expect(actions.map((a) => a.action)).toEqual([
      "order.paid",
      "order.disputed",
      "order.dispute_won",
      "order.refunded",
    ]);
  });

  // A real fault: the one SQLite connection refuses writes (SQLITE_READONLY), as a read-only file
  // system does. PostgreSQL's faults are test/db/database-faults.process.test.ts's.
  it.runIf(dialect === "sqlite")(
    "a transient fault (the database cannot serve) is 503 and records nothing: the retry acts",
    async () => {
      const id = await integration("stripe", "whsec_sales");
      const body = JSON.stringify({
        id: "evt_fault",
        type: "checkout.session.completed",
        livemode: true,
        data: { object: session() },
      });
      const send = () =>
        f.app.inject({
          method: "POST",
          url: `/api/integrations/stripe/${id}/webhook`,
          headers: {
            "content-type": "application/json",
            "stripe-signature": Stripe.webhooks.generateTestHeaderString({
              payload: body,
              secret: "whsec_sales",
              timestamp: Math.floor(now / 1000),
            }),
          },
          payload: body,
        });
      await sql`pragma query_only = 1`.execute(f.db);
      const failed = await send().finally(() => sql`pragma query_only = 0`.execute(f.db));
      expect(failed.statusCode).toBe(503);
      expect(failed.json().code).toBe("DATABASE_UNAVAILABLE");
      expect(
        await f.db
          .selectFrom("integration_events")
          .selectAll()
          .where("event_key", "=", "evt_fault")
          .execute(),
      ).toEqual([]);
      expect((await send()).json()).toEqual({ received: true, status: "processed" });
      expect(await licenses()).toHaveLength(1);
      expect(await mails()).toHaveLength(1);
    },
  );

  it("Paddle: transaction.completed makes licenses; a refund counts once approved", async () => {
    const id = await integration("paddle", "pdl_secret");
    await callWithApiKey(f, apiKey, "PUT", `/api/admin/integrations/${id}/prices/pri_1`, {
      planId: plan.once,
      quantityMeans: "licenses",
    });
    const paddle = async (eventId: string, type: string, data: Record<string, unknown>) => {
      const body = JSON.stringify({
        event_id: eventId,
        event_type: type,
        occurred_at: new Date(now).toISOString(),
        data,
      });
      const ts = Math.floor(now / 1000);
      const h1 = createHmac("sha256", "pdl_secret").update(`${ts}:${body}`).digest("hex");
      const response = await f.app.inject({
        method: "POST",
        url: `/api/integrations/paddle/${id}/webhook`,
        headers: { "content-type": "application/json", "paddle-signature": `ts=${ts};h1=${h1}` },
        payload: body,
      });
      expect(response.statusCode, response.body).toBe(200);
      return response.json<{ status: string }>().status;
    };
    expect(
      await paddle("evt_t1", "transaction.completed", {
        id: "txn_1",
        origin: "web",
        items: [{ price: { id: "pri_1" }, quantity: 2 }],
        customer: { email: "cy@example.com" },
      }),
    ).toBe("processed");
    expect((await licenses()).map((l) => [l.external_id, l.max_machines])).toEqual([
      ["txn_1", 2],
      ["txn_1/2", 2],
    ]);
    // One message per license, keyed by the order's id.
    expect((await mails()).map((m) => m.key)).toEqual([
      `license_delivered:${id}:txn_1`,
      `license_delivered:${id}:txn_1/2`,
    ]);
    const refund = { id: "adj_1", action: "refund", type: "full", transaction_id: "txn_1" };
    await paddle("evt_a1", "adjustment.created", { ...refund, status: "pending_approval" });
    expect((await licenses()).map((l) => l.status)).toEqual(["ACTIVE", "ACTIVE"]);
    await paddle("evt_a2", "adjustment.updated", { ...refund, status: "approved" });
    expect((await licenses()).map((l) => l.status)).toEqual(["REVOKED", "REVOKED"]);
  });

  it("Lemon Squeezy: a paid order_created makes the license; order_refunded revokes it", async () => {
    const id = await integration("lemonsqueezy", "ls_secret");
    await callWithApiKey(f, apiKey, "PUT", `/api/admin/integrations/${id}/prices/4242`, {
      planId: plan.once,
    });
    const lemon = async (name: string, attributes: Record<string, unknown>) => {
      const body = JSON.stringify({
        meta: { event_name: name, test_mode: false },
        data: { type: "orders", id: "9001", attributes },
      });
      const response = await f.app.inject({
        method: "POST",
        url: `/api/integrations/lemonsqueezy/${id}/webhook`,
        headers: {
          "content-type": "application/json",
          "x-signature": createHmac("sha256", "ls_secret").update(body).digest("hex"),
        },
        payload: body,
      });
      return response.json<{ status: string }>().status;
    };
    const order = {
      status: "paid",
      user_email: "di@example.com",
      user_name: "Di",
      total: 5000,
      first_order_item: { variant_id: 4242, quantity: 1 },
      updated_at: "2026-12-01T12:00:00.000000Z",
    };
    expect(await lemon("order_created", order)).toBe("processed");
    expect((await licenses())[0]).toMatchObject({
      external_id: "9001",
      customer_email: "di@example.com",
    });
    expect(
      await lemon("order_refunded", {
        ...order,
        status: "refunded",
        refunded_amount: 5000,
        updated_at: "2026-12-02T12:00:00.000000Z",
      }),
    ).toBe("processed");
    expect((await licenses())[0]?.status).toBe("REVOKED");
  });
});
