import Stripe from "stripe";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createPlan } from "../../src/actions/plans.js";
import { adminAccess } from "../helpers/admin-access.js";
import { cookieAfter } from "../helpers/dashboard.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

describe.each(dialects)("dashboard integrations page (%s)", (dialect) => {
  let f: Fixture;
  let cookie: string;
  let csrf: string;
  let planId: string;
  beforeAll(async () => {
    f = await createFixture(dialect, { publicUrl: "https://licenses.example.com" });
    ({ cookie, csrf } = await adminAccess(f, "integrations-page@example.com"));
    const cli = { type: "cli" as const, id: null, label: "test", ip: null };
    planId = (
      await createPlan(f.db, cli, f.product.slug, {
        slug: "monthly",
        name: "Monthly",
        subscription: true,
        durationDays: 30,
        maxMachines: 2,
      })
    ).id;
  });
  afterAll(async () => {
    await f.close();
  });
  beforeEach(async () => {
    await f.db.deleteFrom("integrations").execute();
  });

  const form = (url: string, fields: Record<string, string>) =>
    f.app.inject({
      method: "POST",
      url,
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ ...fields, _csrf: csrf }).toString(),
    });
  const page = (url: string, withCookie = cookie) =>
    f.app.inject({ method: "GET", url, headers: { cookie: withCookie } });

  it("is in the navigation and creates an integration whose secret no page shows", async () => {
    const empty = await page("/admin/integrations");
    expect(empty.statusCode).toBe(200);
    expect(empty.body).toContain('href="/admin/integrations"');
    expect(empty.body).toContain("No payment integrations yet.");
    expect(empty.body).toContain('type="password"');

    const secret = "whsec_dashboard_secret_value";
    const created = await form("/admin/integrations", {
      product: f.product.slug,
      provider: "paddle",
      mode: "test",
      description: "",
      secret,
    });
    expect(created.statusCode, created.body).toBe(303);
    const row = await f.db.selectFrom("integrations").selectAll().executeTakeFirstOrThrow();
    expect(row).toMatchObject({ provider: "paddle", mode: "test", description: null });
    const url = `https://licenses.example.com/api/integrations/paddle/${row.id}/webhook`;

    const next = await page("/admin/integrations", cookieAfter(cookie, created));
    expect(next.body).toContain(`Integration created: paste ${url}`);
    expect(next.body).toContain(`<code id="url-${row.id}">${url}</code`);
    expect(next.body).not.toContain(secret);
    const again = await page("/admin/integrations");
    expect(again.body).not.toContain(secret);
    expect(again.body).not.toContain("Integration created");

    const [entry] = await f.db
      .selectFrom("audit_log")
      .selectAll()
      .where("action", "=", "integration.create")
      .execute();
    expect(entry).toMatchObject({ target_type: "integration", target_id: row.id });
    expect(JSON.stringify(entry)).not.toContain(secret);
  });

  it("sends a refused form back with its errors, the product kept and the secret blank", async () => {
    const refused = await form("/admin/integrations", {
      product: "no-such-product",
      provider: "stripe",
      mode: "live",
      description: "",
      secret: "whsec_refused_secret",
    });
    expect(refused.statusCode).toBe(404);
    expect(refused.body).toContain('value="no-such-product"');
    expect(refused.body).not.toContain("whsec_refused_secret");
    const short = await form("/admin/integrations", {
      product: f.product.slug,
      provider: "stripe",
      mode: "live",
      description: "",
      secret: "abc",
    });
    expect(short.statusCode).toBe(400);
    expect(short.body).toContain('aria-invalid="true"');
    expect(await f.db.selectFrom("integrations").selectAll().execute()).toHaveLength(0);
  });

  it("refuses a form without the CSRF token", async () => {
    const response = await f.app.inject({
      method: "POST",
      url: "/admin/integrations",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ product: f.product.slug, provider: "stripe" }).toString(),
    });
    expect(response.statusCode).toBe(403);
    expect(await f.db.selectFrom("integrations").selectAll().execute()).toHaveLength(0);
  });

  const integrationRow = () =>
    f.db.selectFrom("integrations").selectAll().executeTakeFirstOrThrow();
  const auditActions = async (id: string) =>
    (
      await f.db
        .selectFrom("audit_log")
        .select("action")
        .where("target_id", "=", id)
        .orderBy("id")
        .execute()
    ).map((r) => r.action);

  it("rotates a secret: adds the new one, removes the old one, values never shown", async () => {
    await form("/admin/integrations", {
      product: f.product.slug,
      provider: "stripe",
      mode: "live",
      description: "EU account",
      secret: "whsec_old_secret",
    });
    const { id } = await integrationRow();
    const added = await form(`/admin/integrations/${id}/secrets`, { secret: "whsec_new_secret" });
    expect(added.statusCode, added.body).toBe(303);
    const shown = await page(`/admin/integrations/${id}`, cookieAfter(cookie, added));
    expect(shown.body).toContain("Secret added");
    expect(shown.body).not.toContain("whsec_old_secret");
    expect(shown.body).not.toContain("whsec_new_secret");
    const secrets = await f.db
      .selectFrom("integration_secrets")
      .select("id")
      .where("integration_id", "=", id)
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    expect(secrets).toHaveLength(2);
    const oldId = secrets[0]?.id ?? "";
    expect(shown.body).toContain(oldId);
    const removed = await form(`/admin/integrations/${id}/secrets/remove`, { secretId: oldId });
    expect(removed.statusCode).toBe(303);
    const after = await page(`/admin/integrations/${id}`);
    expect(after.body).not.toContain(oldId);
    const edited = await form(`/admin/integrations/${id}/edit`, { mode: "test", description: "" });
    expect(edited.statusCode).toBe(303);
    expect(await integrationRow()).toMatchObject({ mode: "test", description: null });
    expect(await auditActions(id)).toEqual([
      "integration.create",
      "integration.add_secret",
      "integration.remove_secret",
      "integration.update",
    ]);
  });

  it("lists an ignored event with its reason, maps its price and replays it", async () => {
    const secret = "whsec_dashboard_sales";
    await form("/admin/integrations", {
      product: f.product.slug,
      provider: "stripe",
      mode: "live",
      description: "",
      secret,
    });
    const { id } = await integrationRow();
    const body = JSON.stringify({
      id: "evt_dashboard_1",
      type: "invoice.paid",
      livemode: true,
      created: Math.floor(Date.now() / 1000),
      data: {
        object: {
          id: "in_dashboard_1",
          object: "invoice",
          billing_reason: "subscription_create",
          customer_email: "bob@example.com",
          parent: { subscription_details: { subscription: "sub_dashboard" } },
          lines: {
            data: [
              {
                quantity: 1,
                period: { end: Math.floor(Date.now() / 1000) + 30 * 86_400 },
                pricing: { price_details: { price: "price_dash" } },
              },
            ],
          },
        },
      },
    });
    const header = Stripe.webhooks.generateTestHeaderString({ payload: body, secret });
    const sent = await f.app.inject({
      method: "POST",
      url: `/api/integrations/stripe/${id}/webhook`,
      headers: { "content-type": "application/json", "stripe-signature": header },
      payload: body,
    });
    expect(sent.statusCode, sent.body).toBe(200);
    const event = await f.db.selectFrom("integration_events").selectAll().executeTakeFirstOrThrow();
    expect(event.status).toBe("ignored");

    // The overview alerts to it, for all products and for its product, linking its page.
    for (const url of ["/admin", `/admin?product=${f.product.slug}`]) {
      const alert = await page(url);
      expect(alert.body).toContain('id="ignored-payment-events"');
      expect(alert.body).toMatch(/Ignored payment events <span class="muted">1<\/span>/);
      expect(alert.body).toContain(`href="/admin/integrations/${id}"`);
    }

    const ignored = await page(`/admin/integrations/${id}`);
    expect(ignored.body).toContain("price_dash");
    expect(ignored.body).toContain(event.reason ?? "no reason");
    expect(ignored.body).toContain(`value="${event.id}"`);
    expect(ignored.body).toMatch(/>\s*Replay\s*</);

    const mapped = await form(`/admin/integrations/${id}/prices`, {
      priceId: "price_dash",
      planId,
      quantityMeans: "seats",
    });
    expect(mapped.statusCode, mapped.body).toBe(303);
    const withPrice = await page(`/admin/integrations/${id}`);
    expect(withPrice.body).toContain("<code>price_dash</code> sells monthly");

    const replayed = await form(`/admin/integrations/${id}/events/replay`, { eventId: event.id });
    expect(replayed.statusCode, replayed.body).toBe(303);
    const done = await page(`/admin/integrations/${id}`, cookieAfter(cookie, replayed));
    expect(done.body).toContain("Event replayed: processed");
    expect(done.body).not.toMatch(/>\s*Replay\s*</);
    const licenses = await f.db
      .selectFrom("licenses")
      .selectAll()
      .where("plan_id", "=", planId)
      .execute();
    expect(licenses).toHaveLength(1);

    // Replayed and processed: no longer ignored, no alert.
    expect((await page("/admin")).body).not.toContain('id="ignored-payment-events"');

    const unmapped = await form(`/admin/integrations/${id}/prices/remove`, {
      priceId: "price_dash",
    });
    expect(unmapped.statusCode).toBe(303);
    expect(await f.db.selectFrom("integration_prices").selectAll().execute()).toHaveLength(0);
    expect(await auditActions(id)).toContain("integration.map_price");
    expect(await auditActions(id)).toContain("integration.unmap_price");
  });

  it("sends a refused price back to the page, the other forms as they were; no such page is 404", async () => {
    await form("/admin/integrations", {
      product: f.product.slug,
      provider: "lemonsqueezy",
      mode: "test",
      description: "",
      secret: "lemon_secret_value",
    });
    const { id } = await integrationRow();
    const refused = await form(`/admin/integrations/${id}/prices`, {
      priceId: "12345",
      planId,
      quantityMeans: "dozens",
    });
    expect(refused.statusCode).toBeGreaterThanOrEqual(400);
    expect(refused.body).toContain('value="12345"');
    expect(refused.body).toMatch(/<option value="test" selected>/);
    expect(await f.db.selectFrom("integration_prices").selectAll().execute()).toHaveLength(0);
    const lastSecret = await form(`/admin/integrations/${id}/secrets/remove`, {
      secretId: (
        await f.db.selectFrom("integration_secrets").select("id").executeTakeFirstOrThrow()
      ).id,
    });
    expect(lastSecret.statusCode).toBeGreaterThanOrEqual(400);
    expect(lastSecret.body).toContain('role="alert"');
    expect((await page("/admin/integrations/int_nope")).statusCode).toBe(404);
  });
});
