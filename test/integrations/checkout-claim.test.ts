import { randomBytes } from "node:crypto";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectPaymentProvider, mapPriceToPlan } from "../../src/actions/integrations.js";
import { retryWaitingPaymentEvents } from "../../src/actions/integration-events.js";
import { createPlan } from "../../src/actions/plans.js";
import { defaultRateLimits } from "../../src/http/rate-limits.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

const masterKey = randomBytes(32);
const cli = { type: "cli" as const, id: null, label: "test", ip: null };

describe.each(dialects)("the thank-you page's claim (%s)", (dialect) => {
  let f: Fixture;
  let integrationId: string;
  // A real plan: a one-time sale, one slot.
  let planId = "";
  beforeAll(async () => {
    f = await createFixture(dialect, {
      masterKey,
      rateLimits: { ...defaultRateLimits, license: { max: 14, windowMs: 60_000 } },
    });
    integrationId = (
      await connectPaymentProvider(
        f.db,
        cli,
        masterKey,
        { product: f.product.slug, provider: "stripe", secret: "whsec_claim" },
        "",
      )
    ).id;
    planId = (
      await createPlan(f.db, cli, f.product.slug, { slug: "once", name: "Once", maxMachines: 1 })
    ).id;
  });
  afterAll(async () => {
    await f.close();
  });

  const claim = (query: string) =>
    f.app.inject({ method: "GET", url: `/api/checkout/claim?${query}` });

  it("202 until the webhook made the licenses, the same for an id that is no order; then 200 masked", async () => {
    const pending = await claim("provider=stripe&session=cs_test_claim");
    expect(pending.statusCode).toBe(202);
    expect(pending.json()).toEqual({ status: "pending", retryAfterSeconds: 2 });
    const unknown = await claim("provider=stripe&session=cs_not_an_order");
    expect(unknown.statusCode).toBe(202);
    expect(unknown.body).toBe(pending.body);

    const body = JSON.stringify({
      id: "evt_claim",
      type: "checkout.session.completed",
      livemode: true,
      data: {
        object: {
          id: "cs_test_claim",
          mode: "payment",
          payment_status: "paid",
          metadata: { shipkey_plan: planId },
          customer_details: { email: "ada.lovelace@example.com" },
        },
      },
    });
    const sent = await f.app.inject({
      method: "POST",
      url: `/api/integrations/stripe/${integrationId}/webhook`,
      headers: {
        "content-type": "application/json",
        "stripe-signature": Stripe.webhooks.generateTestHeaderString({
          payload: body,
          secret: "whsec_claim",
        }),
      },
      payload: body,
    });
    expect(sent.json()).toEqual({ received: true, status: "processed" });

    const ready = await claim("provider=stripe&session=cs_test_claim");
    expect(ready.statusCode).toBe(200);
    expect(ready.headers["cache-control"]).toBe("no-store");
    const license = await f.db
      .selectFrom("licenses")
      .select("license_key")
      .where("external_id", "=", "cs_test_claim")
      .executeTakeFirstOrThrow();
    expect(ready.json()).toEqual({
      status: "ready",
      licenses: [{ licenseKey: `…${license.license_key.slice(-4)}`, product: f.product.slug }],
      email: "a***@example.com",
    });
    expect(ready.body).not.toContain(license.license_key);
    // Another provider's parameter names no Stripe order.
    expect((await claim("provider=paddle&transaction=cs_test_claim")).statusCode).toBe(202);
  });

  const sendStripe = async (id: string, type: string, object: Record<string, unknown>) => {
    const body = JSON.stringify({ id, type, livemode: true, data: { object } });
    const response = await f.app.inject({
      method: "POST",
      url: `/api/integrations/stripe/${integrationId}/webhook`,
      headers: {
        "content-type": "application/json",
        "stripe-signature": Stripe.webhooks.generateTestHeaderString({
          payload: body,
          secret: "whsec_claim",
        }),
      },
      payload: body,
    });
    return response.json<{ status: string }>().status;
  };

  it("a subscription's checkout is found by its cs_… once its first invoice made the licenses", async () => {
    await mapPriceToPlan(f.db, cli, integrationId, {
      priceId: "price_sub",
      planId,
      quantityMeans: "seats",
    });
    const checkout = {
      id: "cs_test_sub",
      mode: "subscription",
      subscription: "sub_claim",
      payment_status: "paid",
    };
    expect(await sendStripe("evt_cs_sub", "checkout.session.completed", checkout)).toBe("waiting");
    expect((await claim("provider=stripe&session=cs_test_sub")).statusCode).toBe(202);
    const invoice = {
      id: "in_sub_1",
      billing_reason: "subscription_create",
      customer_email: "sub@example.com",
      parent: { subscription_details: { subscription: "sub_claim" } },
      lines: {
        data: [{ quantity: 1, period: { end: 1_900_000_000 }, price: { id: "price_sub" } }],
      },
    };
    expect(await sendStripe("evt_in_sub", "invoice.paid", invoice)).toBe("processed");
    expect(await retryWaitingPaymentEvents(f.db, Date.now() + 2 * 3_600_000)).toBe(1);
    const ready = await claim("provider=stripe&session=cs_test_sub");
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toMatchObject({ status: "ready", email: "s***@example.com" });
  });

  it("names its order by the provider's parameter; anything else is 400; limited per address", async () => {
    expect((await claim("provider=stripe")).json().code).toBe("MISSING_REQUIRED_FIELDS");
    expect((await claim("provider=stripe&session=a%20b")).statusCode).toBe(400);
    expect((await claim("provider=gumroad&session=x")).statusCode).toBe(400);
    const answers = [];
    for (let i = 0; i < 14; i++)
      answers.push((await claim("provider=paddle&transaction=txn_x")).statusCode);
    expect(answers).toContain(429);
  });
});
