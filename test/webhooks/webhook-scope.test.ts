import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/database.js";
import { migrateTo, migrateToLatest } from "../../src/db/migrate.js";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import { recordAudit } from "../../src/domain/audit/audit-log.js";
import { startReceiver } from "../helpers/webhook-receiver.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { createTestDatabase, dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import type { ApiKeyScope } from "../../src/contracts/vocabulary.js";

/**
 * webhooks:write reaches no further than licenses:read: a delivery's license keys and customers
 * are masked without it, an event from before a URL change is not sent to the new URL without it,
 * and the audit log holds a webhook URL's origin only (its path and query may be a secret).
 */
describe.each(dialects)("webhook data within a key's scope (%s)", (dialect) => {
  let f: Fixture;
  let all: string;
  let session: { cookie: string; csrf: string };
  const crm = "https://crm.example.com/hooks/T0KEN-IN-PATH?secret=s3cr3t";
  const evil = "https://evil.example:8443/collect/T0KEN-TWO?k=v";
  const keys: Partial<Record<string, string>> = {};
  beforeAll(async () => {
    f = await createFixture(dialect, { webhooks: { allowPrivate: true, timeoutMs: 2_000 } });
    const access = await adminAccess(f, "scope@example.com");
    all = access.apiKey;
    session = { cookie: access.cookie, csrf: access.csrf };
  });
  afterAll(async () => {
    await f.close();
  });
  beforeEach(async () => {
    await f.db.deleteFrom("webhook_deliveries").execute();
    await f.db.deleteFrom("webhook_endpoints").execute();
  });

  /** A key holding exactly `scopes`, made once per set of scopes. */
  async function keyWith(...scopes: ApiKeyScope[]): Promise<string> {
    const name = scopes.join(" ");
    keys[name] ??= (await createApiKey(f.db, { name, scopes })).key;
    return keys[name] ?? "";
  }

  const as = (
    key: string,
    method: "GET" | "POST" | "PATCH",
    url: string,
    body?: Record<string, unknown>,
  ) => callWithApiKey(f, key, method, url, body);

  async function endpoint(url = crm): Promise<string> {
    const created = await as(all, "POST", "/api/admin/webhook-endpoints", {
      url,
      events: ["license.created", "machine.activated"],
    });
    expect(created.statusCode).toBe(201);
    return created.json<{ id: string }>().id;
  }

  /** A license for Ada, activated once: a license.created and a machine.activated event. */
  async function adaLicense(): Promise<string> {
    const created = await as(all, "POST", "/api/admin/licenses", {
      productSlug: f.product.slug,
      maxMachines: 2,
      customerName: "Ada Lovelace",
      customerEmail: "ada@example.com",
    });
    expect(created.statusCode).toBe(201);
    const { licenseKey } = created.json<{ licenseKey: string }>();
    const activated = await f.post("/api/license/activate", {
      licenseKey,
      machineId: "m-ada",
      productSlug: f.product.slug,
    });
    expect(activated.statusCode).toBe(200);
    return licenseKey;
  }

  const deliveries = (id: string) =>
    f.db
      .selectFrom("webhook_deliveries")
      .select(["event_id", "event_type", "created_at"])
      .where("endpoint_id", "=", id)
      .orderBy("event_id")
      .execute();

  /** Returns once the clock has passed `ms`: what happens next is strictly later. */
  function after(ms: number): void {
    while (Date.now() <= ms) {
      // A millisecond at most.
    }
  }

  it("without licenses:read, payloads show license keys masked and no customer", async () => {
    const id = await endpoint();
    const licenseKey = await adaLicense();
    const [created, activated] = await deliveries(id);
    expect([created?.event_type, activated?.event_type]).toEqual([
      "license.created",
      "machine.activated",
    ]);
    const masked = `…${licenseKey.slice(-4)}`;
    const hooksOnly = await keyWith("webhooks:write");
    const show = (key: string, eventId = "") =>
      as(key, "GET", `/api/admin/webhook-endpoints/${id}/deliveries/${eventId}`);

    const license = await show(hooksOnly, created?.event_id);
    expect(license.statusCode).toBe(200);
    const body = license.json<{
      payload: { data: { license: Record<string, unknown> } };
      licenseDataWithheld: boolean;
    }>();
    expect(body.licenseDataWithheld).toBe(true);
    expect(body.payload).toMatchObject({
      type: "license.created",
      data: { license: { licenseKey: masked, product: f.product.slug, maxMachines: 2 } },
    });
    expect(Object.keys(body.payload.data.license)).not.toContain("customerName");
    expect(Object.keys(body.payload.data.license)).not.toContain("customerEmail");
    const machine = await show(hooksOnly, activated?.event_id);
    expect(machine.json()).toMatchObject({
      licenseDataWithheld: true,
      payload: { type: "machine.activated", data: { licenseKey: masked } },
    });
    for (const answer of [license, machine]) {
      expect(answer.body).not.toContain(licenseKey);
      expect(answer.body).not.toContain("Ada Lovelace");
      expect(answer.body).not.toContain("ada@example.com");
    }
    // The list has no payload at all.
    const list = await as(hooksOnly, "GET", `/api/admin/webhook-endpoints/${id}/deliveries`);
    expect(list.statusCode).toBe(200);
    expect(list.body).not.toContain(licenseKey.slice(0, 10));

    // With licenses:read too, and for a signed-in admin (every scope), the payload in full.
    const both = await keyWith("webhooks:write", "licenses:read");
    const full = await show(both, created?.event_id);
    expect(full.json()).toMatchObject({
      licenseDataWithheld: false,
      payload: {
        data: {
          license: { licenseKey, customerName: "Ada Lovelace", customerEmail: "ada@example.com" },
        },
      },
    });
    expect((await show(both, activated?.event_id)).json()).toMatchObject({
      payload: { data: { licenseKey } },
    });
    const asAdmin = await f.app.inject({
      url: `/api/admin/webhook-endpoints/${id}/deliveries/${created?.event_id}`,
      headers: { cookie: session.cookie },
    });
    expect(asAdmin.json()).toMatchObject({
      licenseDataWithheld: false,
      payload: { data: { license: { licenseKey, customerEmail: "ada@example.com" } } },
    });
    const page = await f.app.inject({
      url: `/admin/webhooks/${id}?show=${created?.event_id}`,
      headers: { cookie: session.cookie },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(licenseKey);
    expect(page.body).toContain("ada@example.com");
  });

  it("a URL set without licenses:read is sent no license data, retries of earlier events included", async () => {
    const receiver = await startReceiver();
    try {
      receiver.answer = () => 500;
      const id = await endpoint();
      await adaLicense();
      const hooksOnly = await keyWith("webhooks:write");
      // Re-pointed at the key holder's own receiver: the pending retries go there masked.
      const moved = await as(hooksOnly, "PATCH", `/api/admin/webhook-endpoints/${id}`, {
        url: receiver.url,
      });
      expect(moved.json()).toMatchObject({ licenseDataWithheld: true });
      await f.db.updateTable("webhook_deliveries").set({ next_attempt_at: 0 }).execute();
      await f.app.webhooks.deliverDue();
      expect(receiver.received).toHaveLength(2);
      for (const hit of receiver.received) {
        expect(hit.body).not.toContain("ada@example.com");
        expect(hit.body).not.toContain("Ada Lovelace");
        expect(hit.body).toMatch(/"licenseKey":"…[0-9A-Z]{4}"/);
      }
      // A key that may read licenses sets the URL again (the same one): full payloads.
      const both = await keyWith("webhooks:write", "licenses:read");
      const reset = await as(both, "PATCH", `/api/admin/webhook-endpoints/${id}`, {
        url: receiver.url,
      });
      expect(reset.json()).toMatchObject({ licenseDataWithheld: false });
      receiver.received.length = 0;
      await f.db.updateTable("webhook_deliveries").set({ next_attempt_at: 0 }).execute();
      await f.app.webhooks.deliverDue();
      expect(receiver.received.some((hit) => hit.body.includes("ada@example.com"))).toBe(true);

      // An endpoint a webhooks:write key creates gets no license data from the start.
      const created = await as(hooksOnly, "POST", "/api/admin/webhook-endpoints", {
        url: receiver.url,
        events: ["license.created"],
      });
      expect(created.json()).toMatchObject({ licenseDataWithheld: true });
    } finally {
      await receiver.close();
    }
  });

  it("a URL change is audited with the old and new origin, never a path or query", async () => {
    const id = await endpoint();
    const changed = await as(
      await keyWith("webhooks:write"),
      "PATCH",
      `/api/admin/webhook-endpoints/${id}`,
      {
        url: evil,
      },
    );
    expect(changed.statusCode).toBe(200);
    expect(changed.json()).toMatchObject({ url: evil });
    const entries = await f.db
      .selectFrom("audit_log")
      .select(["action", "details"])
      .where("target_id", "=", id)
      .orderBy("at")
      .orderBy("id")
      .execute();
    expect(entries.map((e) => [e.action, JSON.parse(e.details) as unknown])).toEqual([
      [
        "webhook_endpoint.create",
        {
          url: "https://crm.example.com",
          events: ["license.created", "machine.activated"],
          products: null,
        },
      ],
      [
        "webhook_endpoint.update",
        {
          changed: ["url"],
          changes: { url: { from: "https://crm.example.com", to: "https://evil.example:8443" } },
        },
      ],
    ]);
    // The same URL again is no change: nothing of it in the entry, and no new url_changed_at.
    const { url_changed_at: changedAt } = await f.db
      .selectFrom("webhook_endpoints")
      .select("url_changed_at")
      .where("id", "=", id)
      .executeTakeFirstOrThrow();
    expect(changedAt).not.toBeNull();
    after(Number(changedAt));
    const same = await as(all, "PATCH", `/api/admin/webhook-endpoints/${id}`, {
      url: evil,
      description: "CRM",
    });
    expect(same.statusCode).toBe(200);
    const last = await f.db
      .selectFrom("audit_log")
      .select("details")
      .where("target_id", "=", id)
      .orderBy("at", "desc")
      .orderBy("id", "desc")
      .executeTakeFirstOrThrow();
    expect(JSON.parse(last.details)).toEqual({
      changed: ["description"],
      changes: { description: { from: null, to: "CRM" } },
    });
    const row = await f.db
      .selectFrom("webhook_endpoints")
      .select("url_changed_at")
      .where("id", "=", id)
      .executeTakeFirstOrThrow();
    expect(row.url_changed_at).toBe(changedAt);

    // audit:read sees the origins only, in every webhook entry.
    const audit = await as(
      await keyWith("audit:read"),
      "GET",
      "/api/admin/audit?action=webhook_endpoint",
    );
    expect(audit.statusCode).toBe(200);
    expect(audit.json<{ items: unknown[] }>().items.length).toBeGreaterThanOrEqual(3);
    for (const secret of ["T0KEN", "s3cr3t", "/hooks", "/collect", "k=v"]) {
      expect(audit.body).not.toContain(secret);
    }
    expect(audit.body).toContain("https://evil.example:8443");
  });

  it("an event from before the URL changed is redelivered only with licenses:read too", async () => {
    const id = await endpoint();
    await adaLicense();
    const [old] = await deliveries(id);
    after(Number(old?.created_at));
    const hooksOnly = await keyWith("webhooks:write");
    const moved = await as(hooksOnly, "PATCH", `/api/admin/webhook-endpoints/${id}`, { url: evil });
    expect(moved.statusCode).toBe(200);
    const redeliver = (key: string, eventId = "") =>
      as(key, "POST", `/api/admin/webhook-endpoints/${id}/deliveries/${eventId}/redeliver`);

    const refused = await redeliver(hooksOnly, old?.event_id);
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({
      error:
        `Event ${old?.event_id} was created before the URL of webhook endpoint ${id} last ` +
        "changed: redelivering it to the new URL needs the licenses:read scope too",
      code: "REDELIVERY_SCOPE_NOT_HELD",
    });
    // Nothing queued, nothing audited.
    const untouched = await f.db
      .selectFrom("webhook_deliveries")
      .select(["status", "next_attempt_at"])
      .where("event_id", "=", old?.event_id ?? "")
      .executeTakeFirstOrThrow();
    expect(untouched).toMatchObject({ status: "pending" });
    const redeliveries = () =>
      f.db
        .selectFrom("audit_log")
        .select("details")
        .where("action", "=", "webhook_endpoint.redeliver")
        .where("target_id", "=", id)
        .execute();
    expect(await redeliveries()).toEqual([]);
    // An unknown event is still a 404 first.
    expect((await redeliver(hooksOnly, "msg_nope")).json()).toMatchObject({
      code: "WEBHOOK_DELIVERY_NOT_FOUND",
    });

    const allowed = await redeliver(
      await keyWith("webhooks:write", "licenses:read"),
      old?.event_id,
    );
    expect(allowed.statusCode).toBe(202);
    expect(allowed.json()).toMatchObject({
      eventId: old?.event_id,
      status: "pending",
      attempts: 0,
    });
    // A signed-in admin holds every scope.
    const asAdmin = await f.app.inject({
      method: "POST",
      url: `/api/admin/webhook-endpoints/${id}/deliveries/${old?.event_id}/redeliver`,
      headers: { cookie: session.cookie, "x-csrf-token": session.csrf },
    });
    expect(asAdmin.statusCode).toBe(202);
    expect(await redeliveries()).toHaveLength(2);

    // An event after the change was meant for the new URL: webhooks:write is enough.
    const { url_changed_at: changedAt } = await f.db
      .selectFrom("webhook_endpoints")
      .select("url_changed_at")
      .where("id", "=", id)
      .executeTakeFirstOrThrow();
    after(Number(changedAt));
    await adaLicense();
    const recent = (await deliveries(id)).filter((d) => d.created_at > Number(changedAt));
    expect(recent).toHaveLength(2);
    for (const delivery of recent) {
      expect((await redeliver(hooksOnly, delivery.event_id)).statusCode).toBe(202);
    }
    // So is a test event, and any event of an endpoint whose URL never changed.
    const test = await as(hooksOnly, "POST", `/api/admin/webhook-endpoints/${id}/test`);
    expect((await redeliver(hooksOnly, test.json<{ eventId: string }>().eventId)).statusCode).toBe(
      202,
    );
    const unmoved = await endpoint();
    await adaLicense();
    const [first] = await deliveries(unmoved);
    const again = await as(
      hooksOnly,
      "POST",
      `/api/admin/webhook-endpoints/${unmoved}/deliveries/${first?.event_id}/redeliver`,
    );
    expect(again.statusCode).toBe(202);
  });
});

describe.each(dialects)("the audit log's earlier webhook URLs, upgraded (%s)", (dialect) => {
  it("0025 keeps the origin of each webhook_endpoint.create entry's URL, and nothing else", async () => {
    const testDatabase = await createTestDatabase(dialect);
    const { db, close } = await openDatabase(testDatabase.url);
    try {
      await migrateTo(db, "0024_license_overview_indexes");
      const actor = { type: "cli" as const, id: null, label: "cli", ip: null };
      const target = { type: "webhook_endpoint", id: "whe_1" };
      let at = Date.now();
      const create = (url: unknown) =>
        recordAudit(
          db,
          actor,
          "webhook_endpoint.create",
          target,
          { url, events: ["license.created"], products: null },
          at++,
        );
      await create("https://hooks.slack.com/services/T000/B000/XXXXSECRET");
      await create("https://crm.example.com:8443/in?token=abc");
      await create("https://already.example.com");
      await create("not a url");
      await recordAudit(
        db,
        actor,
        "release.publish",
        { type: "release", id: "a@1" },
        { url: "https://cdn.example.com/a?sig=1" },
        at++,
      );
      await migrateToLatest(db);
      const rows = await db
        .selectFrom("audit_log")
        .select(["action", "details"])
        .orderBy("at")
        .orderBy("id")
        .execute();
      const events = { events: ["license.created"], products: null };
      expect(rows.map((row) => [row.action, JSON.parse(row.details) as unknown])).toEqual([
        ["webhook_endpoint.create", { url: "https://hooks.slack.com", ...events }],
        ["webhook_endpoint.create", { url: "https://crm.example.com:8443", ...events }],
        ["webhook_endpoint.create", { url: "https://already.example.com", ...events }],
        ["webhook_endpoint.create", events],
        ["release.publish", { url: "https://cdn.example.com/a?sig=1" }],
      ]);
      const columns = await db.selectFrom("webhook_endpoints").select("url_changed_at").execute();
      expect(columns).toEqual([]);
    } finally {
      await close();
      await testDatabase.drop();
    }
  });
});
