import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { openDatabase } from "../../src/db/database.js";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import { prune } from "../../src/domain/maintenance/prune.js";
import { noAnswer } from "../../src/domain/webhooks/send.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { manualClock, startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver.js";

describe.each(dialects)("webhook endpoints and events (%s)", (dialect) => {
  let f: Fixture;
  let apiKey: string;
  let receiver: WebhookReceiver;
  const clock = manualClock();
  beforeAll(async () => {
    f = await createFixture(dialect, {
      webhooks: { allowPrivate: true, now: clock.now, random: () => 0.5, timeoutMs: 2_000 },
    });
    apiKey = (await adminAccess(f, "endpoints@example.com")).apiKey;
  });
  afterAll(async () => {
    await f.close();
  });
  beforeEach(async () => {
    clock.reset();
    receiver = await startReceiver();
    await f.db.deleteFrom("webhook_deliveries").execute();
    await f.db.deleteFrom("webhook_endpoints").execute();
  });
  afterEach(async () => {
    await receiver.close();
  });

  const admin = (method: "GET" | "POST" | "PATCH" | "DELETE", url: string, body?: unknown) =>
    callWithApiKey(f, apiKey, method, url, body);

  async function endpoint(body: Record<string, unknown>) {
    const response = await admin("POST", "/api/admin/webhook-endpoints", {
      url: receiver.url,
      ...body,
    });
    expect(response.statusCode).toBe(201);
    return response.json<{ id: string; secret: string }>();
  }

  it("create, list, get, update and delete follow the admin API's conventions", async () => {
    const created = await admin("POST", "/api/admin/webhook-endpoints", {
      url: receiver.url,
      events: ["license.created", "release.published"],
      description: "CRM",
    });
    expect(created.statusCode).toBe(201);
    const body = created.json<{ id: string }>();
    expect(body).toMatchObject({
      url: receiver.url,
      events: ["license.created", "release.published"],
      products: null,
      enabled: true,
      description: "CRM",
      consecutiveFailures: 0,
    });
    const listed = await admin("GET", "/api/admin/webhook-endpoints");
    expect(listed.json().items).toHaveLength(1);
    expect(listed.body).not.toContain("whsec_");

    const patched = await admin("PATCH", `/api/admin/webhook-endpoints/${body.id}`, {
      enabled: false,
      products: [f.product.slug],
    });
    expect(patched.json()).toMatchObject({ enabled: false, products: [f.product.slug] });

    const unknownEvent = await admin("PATCH", `/api/admin/webhook-endpoints/${body.id}`, {
      events: ["license.eaten"],
    });
    expect(unknownEvent.statusCode).toBe(400);
    expect(unknownEvent.json()).toMatchObject({ code: "INVALID_FIELD_VALUE" });
    const unknownProduct = await admin("PATCH", `/api/admin/webhook-endpoints/${body.id}`, {
      products: ["no-such-app"],
    });
    expect(unknownProduct.json()).toMatchObject({
      code: "INVALID_FIELD_VALUE",
      field: "products[0]",
    });

    const deleted = await admin("DELETE", `/api/admin/webhook-endpoints/${body.id}`);
    expect(deleted.json()).toEqual({ deleted: true, id: body.id });
    const gone = await admin("GET", `/api/admin/webhook-endpoints/${body.id}`);
    expect(gone.statusCode).toBe(404);
    expect(gone.json()).toMatchObject({ code: "WEBHOOK_ENDPOINT_NOT_FOUND" });

    const actions = await f.db
      .selectFrom("audit_log")
      .select("action")
      .where("target_type", "=", "webhook_endpoint")
      .where("target_id", "=", body.id)
      .orderBy("at")
      .execute();
    expect(actions.map((a) => a.action)).toEqual([
      "webhook_endpoint.create",
      "webhook_endpoint.update",
      "webhook_endpoint.delete",
    ]);
  });

  it("needs webhooks:write, and a key for every product", async () => {
    const without = await createApiKey(f.db, { name: "no hooks", scopes: ["licenses:write"] });
    const refused = await callWithApiKey(f, without.key, "GET", "/api/admin/webhook-endpoints");
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: "MISSING_SCOPE" });
    const limited = await createApiKey(f.db, {
      name: "limited hooks",
      scopes: ["webhooks:write"],
      productIds: [f.product.id],
    });
    const limitedAnswer = await callWithApiKey(
      f,
      limited.key,
      "GET",
      "/api/admin/webhook-endpoints",
    );
    expect(limitedAnswer.statusCode).toBe(403);
    expect(limitedAnswer.json()).toMatchObject({ code: "PRODUCT_NOT_IN_KEY" });
  });

  it("every admin event is recorded for a subscriber, and only for its products", async () => {
    await endpoint({ events: ["license.created"], products: [f.otherProduct.slug] });
    const all = await endpoint({
      events: [
        "license.created",
        "license.updated",
        "license.suspended",
        "license.revoked",
        "license.reinstated",
        "machine.deactivated",
        "certificate.issued",
        "release.published",
        "release.yanked",
        "api_key.created",
        "api_key.revoked",
      ],
      products: [f.product.slug],
    });
    const license = await admin("POST", "/api/admin/licenses", {
      productSlug: f.product.slug,
      maxMachines: 2,
    });
    const { licenseKey } = license.json<{ licenseKey: string }>();
    await admin("PATCH", `/api/admin/licenses/${licenseKey}`, { maxMachines: 3 });
    await admin("POST", `/api/admin/licenses/${licenseKey}/suspend`);
    await admin("POST", `/api/admin/licenses/${licenseKey}/reinstate`);
    await f.post("/api/license/activate", {
      licenseKey,
      machineId: "m-events",
      productSlug: f.product.slug,
    });
    const checkout = await f.post("/api/license/checkout", {
      licenseKey,
      machineId: "m-events",
      productSlug: f.product.slug,
    });
    expect(checkout.statusCode).toBe(200);
    await admin("DELETE", `/api/admin/licenses/${licenseKey}/machines/m-events`);
    await admin("POST", `/api/admin/licenses/${licenseKey}/revoke`);
    const published = await f.post(
      "/api/releases/publish",
      {
        productSlug: f.product.slug,
        version: "1.0.0",
        channel: "STABLE",
        releases: [
          {
            platform: "LINUX",
            arch: "X64",
            downloadUrl: "https://cdn.example.com/a-1.0.0.AppImage",
          },
        ],
      },
      { authorization: `Bearer ${f.publishKey}` },
    );
    expect(published.statusCode).toBe(200);
    await admin("POST", `/api/admin/products/${f.product.slug}/releases/1.0.0/yank`);
    const key = await admin("POST", "/api/admin/api-keys", { name: "k", scopes: ["audit:read"] });
    await admin("POST", `/api/admin/api-keys/${key.json<{ id: string }>().id}/revoke`);
    // The other product's license reaches neither endpoint's product filter.
    await admin("POST", "/api/admin/licenses", { productSlug: "other-app", maxMachines: 1 });

    const rows = await f.db
      .selectFrom("webhook_deliveries")
      .select(["event_type", "payload"])
      .where("endpoint_id", "=", all.id)
      .orderBy("event_id")
      .execute();
    expect(rows.map((r) => r.event_type)).toEqual([
      "license.created",
      "license.updated",
      "license.suspended",
      "license.reinstated",
      "certificate.issued",
      "machine.deactivated",
      "license.revoked",
      "release.published",
      "release.yanked",
      "api_key.created",
      "api_key.revoked",
    ]);
    // An API key's event never carries its secret.
    const created = JSON.parse(rows[9]?.payload ?? "{}") as { data: { apiKey: object } };
    expect(Object.keys(created.data.apiKey)).not.toContain("key");
    const otherEndpoint = await f.db
      .selectFrom("webhook_deliveries")
      .select("event_type")
      .where("endpoint_id", "!=", all.id)
      .execute();
    expect(otherEndpoint.map((r) => r.event_type)).toEqual(["license.created"]);
  });

  it("each rollout and critical change is one event; a write that changes nothing is none", async () => {
    const subscriber = await endpoint({
      events: ["release.rollout_changed", "release.critical_changed"],
    });
    const published = await f.post(
      "/api/releases/publish",
      {
        productSlug: f.product.slug,
        version: "3.0.0",
        channel: "STABLE",
        releases: [
          {
            platform: "LINUX",
            arch: "X64",
            downloadUrl: "https://cdn.example.com/a-3.0.0.AppImage",
          },
        ],
        rollout: { percent: 5 },
      },
      { authorization: `Bearer ${f.publishKey}` },
    );
    expect(published.statusCode).toBe(200);
    const at = `/api/admin/products/${f.product.slug}/releases/3.0.0`;
    await admin("POST", `${at}/rollout`, { percent: 20 });
    await admin("POST", `${at}/rollout`, { percent: 20 });
    await admin("POST", `${at}/rollout/pause`);
    await admin("POST", `${at}/rollout/pause`);
    await admin("POST", `${at}/rollout/resume`);
    await admin("POST", `${at}/critical`, { critical: true });
    await admin("POST", `${at}/critical`, { critical: true });
    await admin("POST", `${at}/rollout/complete`);

    const rows = await f.db
      .selectFrom("webhook_deliveries")
      .select(["event_type", "payload"])
      .where("endpoint_id", "=", subscriber.id)
      .orderBy("event_id")
      .execute();
    const events = rows.map((row) => {
      const { type, data } = JSON.parse(row.payload) as {
        type: string;
        data: { change?: string; critical: boolean; rollout: { percent: number } | null };
      };
      return [type, data.change ?? null, data.critical, data.rollout?.percent ?? null];
    });
    expect(events).toEqual([
      ["release.rollout_changed", "started", false, 5],
      ["release.rollout_changed", "changed", false, 20],
      ["release.rollout_changed", "paused", false, 20],
      ["release.rollout_changed", "resumed", false, 20],
      ["release.critical_changed", null, true, 20],
      ["release.rollout_changed", "completed", true, null],
    ]);
    expect(JSON.parse(rows[0]?.payload ?? "{}")).toMatchObject({
      type: "release.rollout_changed",
      data: {
        product: f.product.slug,
        version: "3.0.0",
        change: "started",
        critical: false,
        rollout: { state: "rolling", percent: 5, stepHours: null, pausedAt: null },
      },
    });
  });

  it("a refused checkout is activation.refused with OFFLINE_LIMIT_REACHED", async () => {
    await endpoint({ events: ["activation.refused"] });
    const licenseKey = await f.createLicense({ maxMachines: 1 });
    const call = (route: string, machineId: string) =>
      f.post(`/api/license/${route}`, { licenseKey, machineId, productSlug: "desktop-app" });
    try {
      // m-a's certificate still counts after m-a is deactivated; once the allowance is lowered
      // to none, m-b's is one too many.
      expect((await call("activate", "m-a")).statusCode).toBe(200);
      expect((await call("checkout", "m-a")).statusCode).toBe(200);
      expect((await call("deactivate", "m-a")).statusCode).toBe(200);
      expect((await call("activate", "m-b")).statusCode).toBe(200);
      await f.db
        .updateTable("products")
        .set({ offline_allowance: 0 })
        .where("id", "=", f.product.id)
        .execute();
      expect((await call("checkout", "m-b")).json()).toMatchObject({
        code: "OFFLINE_LIMIT_REACHED",
      });
    } finally {
      await f.db
        .updateTable("products")
        .set({ offline_allowance: 1 })
        .where("id", "=", f.product.id)
        .execute();
    }
    const [refusal] = await f.db.selectFrom("webhook_deliveries").select("payload").execute();
    expect(JSON.parse(refusal?.payload ?? "{}")).toMatchObject({
      type: "activation.refused",
      data: { code: "OFFLINE_LIMIT_REACHED", machine: { machineId: "m-b" } },
    });
  });

  it("lists deliveries with their payload, redelivers one and sends a test event", async () => {
    const { id } = await endpoint({ events: ["license.created"] });
    await admin("POST", "/api/admin/licenses", { productSlug: f.product.slug, maxMachines: 1 });
    await f.app.webhooks.deliverDue();
    const listed = await admin("GET", `/api/admin/webhook-endpoints/${id}/deliveries`);
    expect(listed.statusCode).toBe(200);
    const [delivery] = listed.json<{ items: Array<{ eventId: string }> }>().items;
    expect(delivery).toMatchObject({
      eventType: "license.created",
      status: "delivered",
      attempts: 1,
      responseStatus: 204,
    });
    const eventId = delivery?.eventId ?? "";
    const detail = await admin("GET", `/api/admin/webhook-endpoints/${id}/deliveries/${eventId}`);
    expect(detail.json()).toMatchObject({ payload: { type: "license.created" } });

    const again = await admin(
      "POST",
      `/api/admin/webhook-endpoints/${id}/deliveries/${eventId}/redeliver`,
    );
    expect(again.statusCode).toBe(202);
    expect(again.json()).toMatchObject({ status: "pending", attempts: 0 });
    const test = await admin("POST", `/api/admin/webhook-endpoints/${id}/test`);
    expect(test.statusCode).toBe(202);
    // Both at once: an endpoint has a few attempts in flight.
    expect(await f.app.webhooks.deliverDue()).toBe(2);
    const testId = test.json<{ eventId: string }>().eventId;
    expect(receiver.received.map((hit) => hit.headers["webhook-id"]).sort()).toEqual(
      [eventId, eventId, testId].sort(),
    );
    const testHit = receiver.received.find((hit) => hit.headers["webhook-id"] === testId);
    expect(JSON.parse(testHit?.body ?? "{}")).toMatchObject({ type: "webhook.test" });
    const missing = await admin("GET", `/api/admin/webhook-endpoints/${id}/deliveries/msg_nope`);
    expect(missing.json()).toMatchObject({ code: "WEBHOOK_DELIVERY_NOT_FOUND" });
  });

  it("refuses private addresses unless WEBHOOKS_ALLOW_PRIVATE, after DNS, at every attempt", async () => {
    const strict = await buildApp({
      database: f.database,
      webhooks: { allowPrivate: false, now: clock.now, timeoutMs: 2_000 },
    });
    try {
      const create = (url: string) =>
        strict.inject({
          method: "POST",
          url: "/api/admin/webhook-endpoints",
          headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
          payload: JSON.stringify({ url, events: ["license.created"] }),
        });
      for (const url of [
        receiver.url,
        "https://127.0.0.1/hooks",
        "https://[::1]/hooks",
        "https://169.254.169.254/latest",
        "https://10.1.2.3/",
        "https://[::ffff:192.168.0.1]/",
        "ftp://example.com/",
      ]) {
        const refused = await create(url);
        expect(refused.statusCode, url).toBe(400);
        expect(refused.json(), url).toMatchObject({ code: "INVALID_FIELD_VALUE", field: "url" });
      }
      // A name is checked once resolved: localhost is loopback.
      const port = new URL(receiver.url).port;
      const named = await create(`https://localhost:${port}/hooks`);
      expect(named.statusCode).toBe(201);
      await admin("POST", "/api/admin/licenses", { productSlug: f.product.slug, maxMachines: 1 });
      expect(await strict.webhooks.deliverDue()).toBe(1);
      const [row] = await f.db.selectFrom("webhook_deliveries").selectAll().execute();
      // The key holder sees no more than that there was no answer (the log says why).
      expect(row?.last_error).toBe(noAnswer);
      expect(receiver.received).toEqual([]);

      // An endpoint stored while private addresses were allowed is refused all the same.
      await f.db.deleteFrom("webhook_deliveries").execute();
      await endpoint({ events: ["license.created"] });
      await f.db
        .updateTable("webhook_endpoints")
        .set({ url: receiver.url })
        .where("url", "like", "https://localhost%")
        .execute();
      await admin("POST", "/api/admin/licenses", { productSlug: f.product.slug, maxMachines: 1 });
      expect(await strict.webhooks.deliverDue()).toBe(2);
      const errors = (await f.db.selectFrom("webhook_deliveries").select("last_error").execute())
        .map((r) => r.last_error)
        .sort();
      expect(errors).toEqual(["http: URLs are not allowed", "http: URLs are not allowed"]);
      expect(receiver.received).toEqual([]);
    } finally {
      await strict.close();
    }
  });

  it("disables an endpoint after a day-long run of failures, with an audit entry", async () => {
    const failing = await buildApp({
      database: f.database,
      webhooks: {
        allowPrivate: true,
        now: clock.now,
        random: () => 0.5,
        timeoutMs: 2_000,
        disableAfterFailures: 3,
      },
    });
    try {
      const { id } = await endpoint({ events: ["license.created"] });
      receiver.answer = () => 500;
      for (let i = 0; i < 4; i++) {
        await admin("POST", "/api/admin/licenses", { productSlug: f.product.slug, maxMachines: 1 });
      }
      expect(await failing.webhooks.deliverDue()).toBe(4);
      // Four failures in a row, but within minutes: still enabled.
      const early = await admin("GET", `/api/admin/webhook-endpoints/${id}`);
      expect(early.json()).toMatchObject({ enabled: true, consecutiveFailures: 4 });
      clock.advance(25 * 3_600_000);
      await admin("POST", `/api/admin/webhook-endpoints/${id}/test`);
      await failing.webhooks.deliverDue();
      const disabled = await admin("GET", `/api/admin/webhook-endpoints/${id}`);
      expect(disabled.json()).toMatchObject({
        enabled: false,
        disabledReason: expect.stringMatching(/consecutive failed attempts$/),
      });
      const entry = await f.db
        .selectFrom("audit_log")
        .selectAll()
        .where("action", "=", "webhook_endpoint.disable")
        .executeTakeFirstOrThrow();
      expect(entry).toMatchObject({ actor_type: "service", target_id: id });
      // A disabled endpoint's deliveries wait (a test event excepted); enabling it sends them.
      receiver.answer = () => 200;
      clock.advance(3_600_000);
      expect(await failing.webhooks.deliverDue()).toBe(1);
      expect(JSON.parse(receiver.received.at(-1)?.body ?? "{}")).toMatchObject({
        type: "webhook.test",
      });
      await admin("PATCH", `/api/admin/webhook-endpoints/${id}`, { enabled: true });
      expect(await failing.webhooks.deliverDue()).toBe(4);
    } finally {
      await failing.close();
    }
  });

  it("an event reaches the endpoints subscribed when it happens: none, one, one disabled, one again", async () => {
    const licenseKey = await f.createLicense({ maxMachines: 10 });
    const recorded = async () =>
      (
        await f.db
          .selectFrom("webhook_deliveries")
          .select("payload")
          .where("event_type", "=", "machine.activated")
          .execute()
      ).map(
        (row) =>
          (JSON.parse(row.payload) as { data: { machine: { machineId: string } } }).data.machine
            .machineId,
      );
    const activate = async (machineId: string) => {
      const response = await f.post("/api/license/activate", {
        licenseKey,
        machineId,
        productSlug: f.product.slug,
      });
      expect(response.statusCode).toBe(200);
    };
    await activate("m-1");
    expect(await recorded()).toEqual([]);
    const { id } = await endpoint({ events: ["machine.activated"] });
    await activate("m-2");
    await activate("m-3");
    expect((await recorded()).sort()).toEqual(["m-2", "m-3"]);
    expect(
      (await admin("PATCH", `/api/admin/webhook-endpoints/${id}`, { enabled: false })).statusCode,
    ).toBe(200);
    await activate("m-4");
    await activate("m-5");
    expect((await recorded()).sort()).toEqual(["m-2", "m-3"]);
    expect(
      (await admin("PATCH", `/api/admin/webhook-endpoints/${id}`, { enabled: true })).statusCode,
    ).toBe(200);
    await activate("m-6");
    expect((await recorded()).sort()).toEqual(["m-2", "m-3", "m-6"]);
  });

  it("prune deletes finished deliveries past their retention, never pending ones", async () => {
    const { id } = await endpoint({ events: ["license.created"] });
    for (let i = 0; i < 3; i++) {
      await admin("POST", "/api/admin/licenses", { productSlug: f.product.slug, maxMachines: 1 });
    }
    const rows = await f.db.selectFrom("webhook_deliveries").select("event_id").execute();
    const day = 86_400_000;
    const old = Date.now() - 31 * day;
    const [delivered, failed, pending] = rows.map((row) => row.event_id);
    const set = (eventId: string | undefined, status: "delivered" | "failed" | "pending") =>
      f.db
        .updateTable("webhook_deliveries")
        .set({ status, created_at: old })
        .where("event_id", "=", eventId ?? "")
        .where("endpoint_id", "=", id)
        .execute();
    await set(delivered, "delivered");
    await set(failed, "failed");
    await set(pending, "pending");
    expect(
      await prune(f.db, { activationHistoryMs: 365 * day, webhookRetentionMs: 40 * day }),
    ).toMatchObject({ webhookDeliveries: 0 });
    expect(
      await prune(f.db, { activationHistoryMs: 365 * day, webhookRetentionMs: 30 * day }),
    ).toMatchObject({ webhookDeliveries: 2 });
    const left = await f.db.selectFrom("webhook_deliveries").select("event_id").execute();
    expect(left.map((row) => row.event_id)).toEqual([pending]);
  });

  it.runIf(dialect === "postgres")("two processes deliver each event exactly once", async () => {
    await endpoint({ events: ["license.created"] });
    const second = await openDatabase(f.url, { poolSize: 5 });
    const other = await buildApp({
      database: second,
      webhooks: { allowPrivate: true, now: clock.now, timeoutMs: 2_000 },
    });
    try {
      for (let i = 0; i < 80; i++) {
        await admin("POST", "/api/admin/licenses", {
          productSlug: f.product.slug,
          maxMachines: 1,
        });
      }
      const drain = async (app: typeof other) => {
        let total = 0;
        for (let sent = -1; sent !== 0;) {
          sent = await app.webhooks.deliverDue();
          total += sent;
        }
        return total;
      };
      const [a, b] = await Promise.all([drain(f.app), drain(other)]);
      expect(a + b).toBe(80);
      const ids = receiver.received.map((hit) => String(hit.headers["webhook-id"]));
      expect(ids).toHaveLength(80);
      expect(new Set(ids).size).toBe(80);
    } finally {
      await other.close();
      await second.close();
    }
  });
});
