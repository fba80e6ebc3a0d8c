import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { noAnswer } from "../../src/domain/webhooks/send.js";
import {
  closedPortUrl,
  manualClock,
  type ReceivedWebhook,
  startReceiver,
  type WebhookReceiver,
} from "../helpers/webhook-receiver.js";
import { noticeOf } from "../helpers/dashboard.js";

describe.each(dialects)("dashboard webhooks page (%s)", (dialect) => {
  let f: Fixture;
  let cookie: string;
  let csrf: string;
  let apiKey: string;
  let receiver: WebhookReceiver;
  const clock = manualClock();
  beforeAll(async () => {
    f = await createFixture(dialect, {
      webhooks: {
        allowPrivate: true,
        timeoutMs: 2_000,
        now: clock.now,
        random: () => 0.5,
        disableAfterFailures: 3,
      },
    });
    ({ cookie, csrf, apiKey } = await adminAccess(f, "hooks-page@example.com"));
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver.close();
    await f.close();
  });
  beforeEach(async () => {
    clock.reset();
    receiver.received.length = 0;
    receiver.answer = () => 204;
    await f.db.deleteFrom("webhook_deliveries").execute();
    await f.db.deleteFrom("webhook_endpoints").execute();
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
    const flash = /shipkey_notice=([^;]+)/.exec(String(created.headers["set-cookie"]))?.[1] ?? "";
    const next = await page("/admin/webhooks", `; shipkey_notice=${flash}`);
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

  const admin = (method: "GET" | "POST", url: string, body?: unknown) =>
    callWithApiKey(f, apiKey, method, url, body);

  async function endpoint(events: string[]) {
    const created = await admin("POST", "/api/admin/webhook-endpoints", {
      url: receiver.url,
      events,
    });
    expect(created.statusCode).toBe(201);
    return created.json<{ id: string; secret: string }>();
  }

  const apiView = async (id: string) =>
    (await admin("GET", `/api/admin/webhook-endpoints/${id}`)).json<Record<string, unknown>>();

  const updates = async (id: string) =>
    (
      await f.db
        .selectFrom("audit_log")
        .select("details")
        .where("action", "=", "webhook_endpoint.update")
        .where("target_id", "=", id)
        .orderBy("at")
        .orderBy("id")
        .execute()
    ).map((row) => JSON.parse(row.details) as unknown);

  /** The settings form as the page fills it in, with `change` applied. */
  const settings = (
    fields: { url: string; events: string[]; products?: string; description?: string },
    enabled = true,
  ) => {
    const body = new URLSearchParams({
      url: fields.url,
      products: fields.products ?? "",
      description: fields.description ?? "",
    });
    for (const type of fields.events) body.append("events", type);
    if (enabled) body.set("enabled", "on");
    return body;
  };

  const flashOf = (response: { headers: Record<string, unknown> }) =>
    /shipkey_notice=([^;]+)/.exec(String(response.headers["set-cookie"]))?.[1] ?? "";

  const signed = (hit: ReceivedWebhook) => ({
    "webhook-id": String(hit.headers["webhook-id"]),
    "webhook-timestamp": String(hit.headers["webhook-timestamp"]),
    "webhook-signature": String(hit.headers["webhook-signature"]),
  });

  it("edits each setting: the API's GET and the audit log show each change", async () => {
    const { id } = await endpoint(["license.created"]);
    const before = await page(`/admin/webhooks/${id}`);
    expect(before.body).toContain(`action="/admin/webhooks/${id}/edit"`);
    expect(before.body).toContain(`value="${receiver.url}"`);
    const edit = (body: URLSearchParams) => form(`/admin/webhooks/${id}/edit`, body);
    const other = `${receiver.url}/other`;
    // The audit entry holds the URL's origin only: here the path changed, the origin did not.
    const origin = new URL(receiver.url).origin;
    const steps: Array<[URLSearchParams, Record<string, unknown>, Record<string, unknown>]> = [
      [
        settings({ url: other, events: ["license.created"] }),
        { url: other },
        { url: { from: origin, to: origin } },
      ],
      [
        settings({ url: other, events: ["license.created", "machine.activated"] }),
        { events: ["license.created", "machine.activated"] },
        { events: { from: ["license.created"], to: ["license.created", "machine.activated"] } },
      ],
      [
        settings({
          url: other,
          events: ["license.created", "machine.activated"],
          products: "desktop-app, other-app",
        }),
        { products: ["desktop-app", "other-app"] },
        { products: { from: null, to: ["desktop-app", "other-app"] } },
      ],
      [
        settings({
          url: other,
          events: ["license.created", "machine.activated"],
          products: "desktop-app, other-app",
          description: "CRM",
        }),
        { description: "CRM" },
        { description: { from: null, to: "CRM" } },
      ],
      [
        settings(
          {
            url: other,
            events: ["license.created", "machine.activated"],
            products: "desktop-app, other-app",
            description: "CRM",
          },
          false,
        ),
        { enabled: false },
        { enabled: { from: true, to: false } },
      ],
      [
        settings({ url: other, events: ["machine.activated"], description: "CRM" }),
        { enabled: true, products: null, events: ["machine.activated"] },
        {
          events: { from: ["license.created", "machine.activated"], to: ["machine.activated"] },
          products: { from: ["desktop-app", "other-app"], to: null },
          enabled: { from: false, to: true },
        },
      ],
    ];
    let notice = "";
    for (const [i, [body, expected, changes]] of steps.entries()) {
      const saved = await edit(body);
      notice = noticeOf(saved);
      expect(saved.statusCode).toBe(303);
      expect(saved.headers.location).toBe(`/admin/webhooks/${id}`);
      expect(await apiView(id)).toMatchObject(expected);
      const entries = await updates(id);
      expect(entries).toHaveLength(i + 1);
      expect(entries.at(-1)).toEqual({ changed: Object.keys(changes), changes });
    }
    const after = await page(`/admin/webhooks/${id}`, `; shipkey_notice=${notice}`);
    expect(after.body).toContain("Endpoint saved.");
    expect(after.body).toContain(`value="${other}"`);
    expect(after.body).toMatch(/value="machine\.activated"\s+checked/);
    expect(after.body).not.toMatch(/value="license\.created"\s+checked/);

    // Saved as it is: nothing changes, nothing is audited.
    const same = await edit(
      settings({ url: other, events: ["machine.activated"], description: "CRM" }),
    );
    expect(same.headers.location).toBe(`/admin/webhooks/${id}`);
    const unchanged = await page(`/admin/webhooks/${id}`, `; shipkey_notice=${noticeOf(same)}`);
    expect(unchanged.body).toContain("Nothing to save: the settings are as they were.");
    expect(await updates(id)).toHaveLength(steps.length);
  });

  it("shows every invalid setting's message beside it at once, and changes nothing", async () => {
    const { id } = await endpoint(["license.created"]);
    const body = settings({
      url: "ftp://example.com/",
      events: [],
      products: "desktop-app, no-such-app",
      description: "x".repeat(300),
    });
    const refused = await form(`/admin/webhooks/${id}/edit`, body);
    expect(refused.statusCode).toBe(400);
    const messages: Record<string, string> = {
      url: "url must be an http or https URL",
      events: "events must name at least one event type",
      products: "products: no product &quot;no-such-app&quot;",
      description: "description",
    };
    for (const [field, message] of Object.entries(messages)) {
      const shown = new RegExp(`id="${field}-error">([^<]*)<`).exec(refused.body)?.[1] ?? "";
      expect(shown, field).toContain(message);
    }
    // The values as typed stay in the form.
    expect(refused.body).toContain('value="ftp://example.com/"');
    expect(refused.body).toContain('value="desktop-app, no-such-app"');
    expect(await apiView(id)).toMatchObject({ url: receiver.url, events: ["license.created"] });
    expect(await updates(id)).toEqual([]);

    // An unknown event type (a tampered form) is refused beside the events too.
    const tampered = settings({ url: receiver.url, events: ["license.created", "nope"] });
    const unknown = await form(`/admin/webhooks/${id}/edit`, tampered);
    expect(unknown.statusCode).toBe(400);
    expect(unknown.body).toMatch(/id="events-error">unknown event type &quot;nope&quot;/);
  });

  it("rotates the secret after asking, shows it once, and both secrets sign in the grace", async () => {
    const { id, secret: old } = await endpoint(["license.created"]);
    const before = await page(`/admin/webhooks/${id}`);
    expect(before.body).toMatch(
      /action="\/admin\/webhooks\/[^"]+\/rotate-secret"[^>]*data-confirm=/,
    );
    expect(before.body).toMatch(/<option\s+value="86400"\s+selected/);

    const rotated = await form(
      `/admin/webhooks/${id}/rotate-secret`,
      new URLSearchParams({ graceSeconds: "3600" }),
    );
    expect(rotated.statusCode).toBe(303);
    expect(rotated.headers.location).toBe(`/admin/webhooks/${id}`);
    expect(rotated.body).not.toContain("whsec_");
    const shown = await page(`/admin/webhooks/${id}`, `; shipkey_notice=${flashOf(rotated)}`);
    const fresh = /whsec_[A-Za-z0-9+/=]+/.exec(shown.body)?.[0] ?? "";
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(old);
    expect(shown.body).toContain("The previous secret signs too until");
    const again = await page(`/admin/webhooks/${id}`);
    expect(again.body).not.toContain("whsec_");
    expect(await apiView(id)).toMatchObject({ previousSecretExpiresAt: expect.any(String) });

    expect((await form(`/admin/webhooks/${id}/test`, new URLSearchParams())).statusCode).toBe(303);
    await f.app.webhooks.deliverDue();
    const [hit] = receiver.received;
    if (!hit) throw new Error("no delivery");
    expect(signed(hit)["webhook-signature"].split(" ")).toHaveLength(2);
    expect(() => new Webhook(old).verify(hit.body, signed(hit))).not.toThrow();
    expect(() => new Webhook(fresh).verify(hit.body, signed(hit))).not.toThrow();

    // No grace: the rotated-out secret stops signing at once.
    const now = await form(
      `/admin/webhooks/${id}/rotate-secret`,
      new URLSearchParams({ graceSeconds: "0" }),
    );
    const shownNow = await page(`/admin/webhooks/${id}`, `; shipkey_notice=${flashOf(now)}`);
    const newest = /whsec_[A-Za-z0-9+/=]+/.exec(shownNow.body)?.[0] ?? "";
    expect(shownNow.body).toContain("The previous secret no longer signs.");
    await form(`/admin/webhooks/${id}/test`, new URLSearchParams());
    await f.app.webhooks.deliverDue();
    const last = receiver.received.at(-1);
    if (!last) throw new Error("no delivery");
    expect(signed(last)["webhook-signature"].split(" ")).toHaveLength(1);
    expect(() => new Webhook(newest).verify(last.body, signed(last))).not.toThrow();
    expect(() => new Webhook(fresh).verify(last.body, signed(last))).toThrow();

    // A grace the form does not offer and the API refuses: refused, nothing rotated.
    const tooLong = await form(
      `/admin/webhooks/${id}/rotate-secret`,
      new URLSearchParams({ graceSeconds: String(8 * 86_400) }),
    );
    expect(tooLong.statusCode).toBeLessThan(500);
    expect(tooLong.headers["set-cookie"] ?? "").not.toMatch(/shipkey_notice=[^;]/);

    const audit = await f.db.selectFrom("audit_log").selectAll().execute();
    const rotations = audit.filter((row) => row.action === "webhook_endpoint.rotate_secret");
    expect(rotations).toHaveLength(2);
    const table = JSON.stringify(audit);
    for (const secret of [old, fresh, newest]) {
      expect(table).not.toContain(secret);
      expect(table).not.toContain(secret.slice("whsec_".length));
    }
  });

  it("an endpoint disabled after failures, enabled again from its page, delivers again", async () => {
    const { id } = await endpoint(["license.created"]);
    receiver.answer = () => 500;
    for (let i = 0; i < 3; i++) {
      await admin("POST", "/api/admin/licenses", { productSlug: f.product.slug, maxMachines: 1 });
    }
    expect(await f.app.webhooks.deliverDue()).toBe(3);
    clock.advance(25 * 3_600_000);
    await form(`/admin/webhooks/${id}/test`, new URLSearchParams());
    await f.app.webhooks.deliverDue();
    expect(await apiView(id)).toMatchObject({
      enabled: false,
      disabledReason: expect.stringMatching(/consecutive failed attempts$/),
    });
    const disabled = await page(`/admin/webhooks/${id}`);
    expect(disabled.body).toContain("DISABLED");
    expect(disabled.body).toMatch(/consecutive failed attempts/);
    expect(disabled.body).not.toMatch(/name="enabled"\s+checked/);

    // Disabled, its deliveries wait past their retry time (a test event excepted).
    receiver.answer = () => 200;
    clock.advance(3_600_000);
    expect(await f.app.webhooks.deliverDue()).toBe(1);
    receiver.received.length = 0;
    const enabled = await form(
      `/admin/webhooks/${id}/edit`,
      settings({ url: receiver.url, events: ["license.created"] }),
    );
    expect(enabled.statusCode).toBe(303);
    expect(await apiView(id)).toMatchObject({
      enabled: true,
      disabledReason: null,
      consecutiveFailures: 0,
    });
    expect((await updates(id)).at(-1)).toEqual({
      changed: ["enabled"],
      changes: { enabled: { from: false, to: true } },
    });
    expect(await f.app.webhooks.deliverDue()).toBe(3);
    const types = receiver.received.map((hit) => (JSON.parse(hit.body) as { type: string }).type);
    expect(types).toEqual(["license.created", "license.created", "license.created"]);
    const delivered = await f.db
      .selectFrom("webhook_deliveries")
      .select("status")
      .where("endpoint_id", "=", id)
      .where("event_type", "=", "license.created")
      .execute();
    expect(delivered.map((row) => row.status)).toEqual(["delivered", "delivered", "delivered"]);
  });

  it("a delivery without an answer shows only that, not why", async () => {
    const created = await admin("POST", "/api/admin/webhook-endpoints", {
      url: await closedPortUrl(),
      events: ["license.created"],
    });
    const { id } = created.json<{ id: string }>();
    await admin("POST", `/api/admin/webhook-endpoints/${id}/test`);
    expect(await f.app.webhooks.deliverDue()).toBe(1);
    const shown = await page(`/admin/webhooks/${id}`);
    expect(shown.body).toContain(`<td>${noAnswer}</td>`);
    expect(shown.body).not.toContain("ECONNREFUSED");
  });
});
