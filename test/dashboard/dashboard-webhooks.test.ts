import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminAccess } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver.js";

describe.each(dialects)("dashboard webhooks page (%s)", (dialect) => {
  let f: Fixture;
  let cookie: string;
  let csrf: string;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    f = await createFixture(dialect, { webhooks: { allowPrivate: true, timeoutMs: 2_000 } });
    ({ cookie, csrf } = await adminAccess(f, "hooks-page@example.com"));
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver.close();
    await f.close();
  });

  const form = (url: string, fields: URLSearchParams) => {
    fields.set("_csrf", csrf);
    return f.app.inject({
      method: "POST",
      url,
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: fields.toString(),
    });
  };
  const page = (url: string, extraCookie = "") =>
    f.app.inject({ method: "GET", url, headers: { cookie: `${cookie}${extraCookie}` } });

  it("creates an endpoint, shows its secret once, then its deliveries and a payload", async () => {
    const fields = new URLSearchParams({ url: receiver.url, products: "desktop-app" });
    fields.append("events", "license.created");
    fields.append("events", "machine.activated");
    const created = await form("/admin/webhooks", fields);
    expect(created.statusCode).toBe(303);
    // The secret travels in a sealed flash cookie, shown on the next page only.
    const flash = /shipkey_flash=([^;]+)/.exec(String(created.headers["set-cookie"]))?.[1] ?? "";
    const next = await page("/admin/webhooks", `; shipkey_flash=${flash}`);
    const secret = /whsec_[A-Za-z0-9+/=]+/.exec(next.body)?.[0];
    expect(secret).toBeDefined();
    const again = await page("/admin/webhooks");
    expect(again.body).not.toContain("whsec_");
    expect(again.body).toContain(receiver.url);

    const [row] = await f.db.selectFrom("webhook_endpoints").select(["id", "products"]).execute();
    expect(row?.products).toBe('["desktop-app"]');
    const id = row?.id ?? "";
    expect((await form(`/admin/webhooks/${id}/test`, new URLSearchParams())).statusCode).toBe(303);
    await f.app.webhooks.deliverDue();
    const detail = await page(`/admin/webhooks/${id}`);
    expect(detail.statusCode).toBe(200);
    expect(detail.body).toContain("webhook.test");
    const [delivery] = await f.db.selectFrom("webhook_deliveries").select("event_id").execute();
    const shown = await page(`/admin/webhooks/${id}?show=${delivery?.event_id ?? ""}`);
    expect(shown.body).toContain("A test event sent from Shipkey");

    const refused = new URLSearchParams({ url: "ftp://example.com/" });
    refused.append("events", "license.created");
    const bad = await form("/admin/webhooks", refused);
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("url must be an http or https URL");

    expect((await form(`/admin/webhooks/${id}/disable`, new URLSearchParams())).statusCode).toBe(
      303,
    );
    expect((await page(`/admin/webhooks/${id}`)).body).toContain("DISABLED");
    expect((await form(`/admin/webhooks/${id}/delete`, new URLSearchParams())).statusCode).toBe(
      303,
    );
    expect(await f.db.selectFrom("webhook_endpoints").select("id").execute()).toEqual([]);
  });
});
