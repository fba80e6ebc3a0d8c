import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { randomBytes } from "node:crypto";
import { resealSecrets } from "../../src/actions/products.js";
import { attemptsPerEndpoint, retryDelaysMs } from "../../src/domain/webhooks/deliveries.js";
import { noAnswer } from "../../src/domain/webhooks/send.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import {
  closedPortUrl,
  manualClock,
  startReceiver,
  startTarpit,
  type WebhookReceiver,
} from "../helpers/webhook-receiver.js";

describe.each(dialects)("webhook delivery (%s)", (dialect) => {
  let f: Fixture;
  let apiKey: string;
  let receiver: WebhookReceiver;
  const clock = manualClock();
  const masterKey = randomBytes(32);
  beforeAll(async () => {
    f = await createFixture(dialect, {
      masterKey,
      webhooks: { allowPrivate: true, now: clock.now, random: () => 0.5, timeoutMs: 1_500 },
    });
    apiKey = (await adminAccess(f, "hooks@example.com")).apiKey;
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

  async function endpoint(events: string[], extra: Record<string, unknown> = {}) {
    const response = await admin("POST", "/api/admin/webhook-endpoints", {
      url: receiver.url,
      events,
      ...extra,
    });
    expect(response.statusCode).toBe(201);
    return response.json<{ id: string; secret: string }>();
  }

  const activate = (licenseKey: string, machineId: string) =>
    f.post("/api/license/activate", { licenseKey, machineId, productSlug: f.product.slug });

  const deliveries = () =>
    f.db.selectFrom("webhook_deliveries").selectAll().orderBy("created_at").execute();

  it("delivers a signed event that the standardwebhooks library verifies", async () => {
    const { secret } = await endpoint(["machine.activated"]);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const licenseKey = await f.createLicense();
    expect((await activate(licenseKey, "m-signed")).statusCode).toBe(200);
    expect(await f.app.webhooks.deliverDue()).toBe(1);

    expect(receiver.received).toHaveLength(1);
    const [hit] = receiver.received;
    if (!hit) throw new Error("no delivery");
    const verified = new Webhook(secret).verify(hit.body, {
      "webhook-id": String(hit.headers["webhook-id"]),
      "webhook-timestamp": String(hit.headers["webhook-timestamp"]),
      "webhook-signature": String(hit.headers["webhook-signature"]),
    }) as { type: string; data: Record<string, unknown> };
    expect(verified.type).toBe("machine.activated");
    expect(verified.data).toMatchObject({
      licenseKey,
      product: f.product.slug,
      machine: { machineId: "m-signed" },
      activeMachines: 1,
      maxMachines: 3,
    });
    const [row] = await deliveries();
    expect(row).toMatchObject({ status: "delivered", attempts: 1, response_status: 204 });
    expect(hit.headers["webhook-id"]).toBe(row?.event_id);
    // Nothing more to send.
    expect(await f.app.webhooks.deliverDue()).toBe(0);
  });

  it("a wrong secret does not verify", async () => {
    await endpoint(["license.created"]);
    await admin("POST", "/api/admin/licenses", { productSlug: f.product.slug, maxMachines: 1 });
    await f.app.webhooks.deliverDue();
    const [hit] = receiver.received;
    if (!hit) throw new Error("no delivery");
    const other = new Webhook(`whsec_${Buffer.alloc(32, 7).toString("base64")}`);
    expect(() =>
      other.verify(hit.body, {
        "webhook-id": String(hit.headers["webhook-id"]),
        "webhook-timestamp": String(hit.headers["webhook-timestamp"]),
        "webhook-signature": String(hit.headers["webhook-signature"]),
      }),
    ).toThrow();
  });

  it("'Machine already activated', a refused activation and validate emit no machine.activated", async () => {
    await endpoint(["machine.activated", "activation.refused"]);
    const licenseKey = await f.createLicense({ maxMachines: 1 });
    expect((await activate(licenseKey, "m-1")).statusCode).toBe(200);
    const again = await activate(licenseKey, "m-1");
    expect(again.statusCode).toBe(200);
    const refused = await activate(licenseKey, "m-2");
    expect(refused.json()).toMatchObject({ code: "MAX_MACHINES_REACHED" });
    const validated = await f.post("/api/license/validate", {
      licenseKey,
      machineId: "m-1",
      productSlug: f.product.slug,
    });
    expect(validated.statusCode).toBe(200);

    const rows = await deliveries();
    expect(rows.map((r) => r.event_type)).toEqual(["machine.activated", "activation.refused"]);
    const refusal = JSON.parse(rows[1]?.payload ?? "{}") as { data: Record<string, unknown> };
    expect(refusal.data).toMatchObject({
      code: "MAX_MACHINES_REACHED",
      licenseKey,
      machine: { machineId: "m-2" },
    });
    // The refused activation left no machine behind.
    const machines = await f.db
      .selectFrom("activations")
      .where("machine_id", "=", "m-2")
      .select("id")
      .execute();
    expect(machines).toEqual([]);
  });

  it("retries after a 500 with the same webhook-id, when the schedule says", async () => {
    await endpoint(["license.created"]);
    let calls = 0;
    receiver.answer = () => (++calls === 1 ? 500 : 200);
    await admin("POST", "/api/admin/licenses", { productSlug: f.product.slug, maxMachines: 1 });
    expect(await f.app.webhooks.deliverDue()).toBe(1);
    const [first] = await deliveries();
    expect(first).toMatchObject({ status: "pending", attempts: 1, response_status: 500 });
    // Not due yet: the first retry waits 5 s.
    expect(await f.app.webhooks.deliverDue()).toBe(0);
    clock.advance(5_100);
    expect(await f.app.webhooks.deliverDue()).toBe(1);
    const [second] = await deliveries();
    expect(second).toMatchObject({ status: "delivered", attempts: 2, response_status: 200 });
    const ids = receiver.received.map((hit) => hit.headers["webhook-id"]);
    expect(ids).toEqual([first?.event_id, first?.event_id]);
  });

  it("retries after a timeout", async () => {
    await endpoint(["license.created"]);
    let calls = 0;
    receiver.answer = () => (++calls === 1 ? "hang" : 200);
    await admin("POST", "/api/admin/licenses", { productSlug: f.product.slug, maxMachines: 1 });
    await f.app.webhooks.deliverDue();
    const [first] = await deliveries();
    expect(first).toMatchObject({ status: "pending", attempts: 1, last_error: noAnswer });
    expect(first?.response_status).toBeNull();
    expect(first?.duration_ms).toBeNull();
    clock.advance(5_100);
    await f.app.webhooks.deliverDue();
    expect((await deliveries())[0]).toMatchObject({ status: "delivered", attempts: 2 });
  });

  /** Another process on the same database, its log kept: lines of JSON. */
  async function otherProcess(webhooks: Record<string, unknown>) {
    const log: Array<Record<string, unknown>> = [];
    const app = await buildApp({
      database: f.database,
      masterKey,
      logger: {
        level: "warn",
        stream: { write: (line: string) => log.push(JSON.parse(line) as Record<string, unknown>) },
      },
      webhooks: { allowPrivate: true, ...webhooks },
    });
    return { app, log };
  }

  it("a receiver that never answers delays no other endpoint: 40 of 40 within 10 s, two processes", async () => {
    const tarpit = await startTarpit();
    await endpoint(["license.created"], { url: tarpit.url });
    await endpoint(["license.created"]);
    for (let i = 0; i < 40; i++) {
      await admin("POST", "/api/admin/licenses", { productSlug: f.product.slug, maxMachines: 1 });
    }
    // As the server runs them: a claim every second, the default 10 s deadline per attempt.
    const workers = [await otherProcess({ pollMs: 1000 }), await otherProcess({ pollMs: 1000 })];
    const started = Date.now();
    try {
      await Promise.all(workers.map(({ app }) => app.ready()));
      while (receiver.received.length < 40 && Date.now() - started < 10_000) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(receiver.received).toHaveLength(40);
      expect(Date.now() - started).toBeLessThan(10_000);
      const ids = new Set(receiver.received.map((hit) => hit.headers["webhook-id"]));
      expect(ids.size).toBe(40);
      // The tarpit holds its own few attempts, over both processes together.
      expect(tarpit.accepted).toBe(attemptsPerEndpoint);
      expect(tarpit.mostOpen).toBe(attemptsPerEndpoint);
    } finally {
      // Close waits for the attempts in flight: they end at their deadline, and are recorded.
      await Promise.all(workers.map(({ app }) => app.close()));
      await tarpit.close();
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(10_000);
    const rows = await deliveries();
    const tried = rows.filter((row) => row.attempts > 0 && row.status === "pending");
    expect(tried).toHaveLength(attemptsPerEndpoint);
    for (const row of tried) {
      expect(row).toMatchObject({
        claimed_until: null,
        last_error: noAnswer,
        response_status: null,
      });
    }
  });

  it("eight receivers that never answer fill a server's attempts, yet a healthy one's go first as they free", async () => {
    const tarpit = await startTarpit();
    for (let i = 0; i < 8; i++) await endpoint(["license.created"], { url: tarpit.url });
    const create = () =>
      admin("POST", "/api/admin/licenses", { productSlug: f.product.slug, maxMachines: 1 });
    for (let i = 0; i < 5; i++) await create();
    // Newer than every tarpit's: oldest first alone would give the tarpits every attempt.
    await endpoint(["license.created"]);
    for (let i = 0; i < 5; i++) await create();
    const worker = await otherProcess({ pollMs: 1000 });
    const started = Date.now();
    try {
      await worker.app.ready();
      while (receiver.received.length < 5 && Date.now() - started < 9_000) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // Before the tarpits' first attempts reach their 10 s deadline.
      expect(receiver.received).toHaveLength(5);
      expect(Date.now() - started).toBeLessThan(9_000);
      expect(tarpit.mostOpen).toBeLessThanOrEqual(8 * attemptsPerEndpoint);
    } finally {
      await worker.app.close();
      await tarpit.close();
    }
  });

  it("a refused private address, a closed port and a timeout look the same; the log says which", async () => {
    const tarpit = await startTarpit();
    const strict = await otherProcess({ allowPrivate: false, timeoutMs: 1_500, random: () => 0.5 });
    const lenient = await otherProcess({ timeoutMs: 1_500, random: () => 0.5 });
    try {
      const port = new URL(receiver.url).port;
      const refused = await endpoint(["release.yanked"], {
        url: `https://localhost:${port}/hooks`,
      });
      expect(
        (await admin("POST", `/api/admin/webhook-endpoints/${refused.id}/test`)).statusCode,
      ).toBe(202);
      expect(await strict.app.webhooks.deliverDue()).toBe(1);
      const closed = await endpoint(["release.yanked"], { url: await closedPortUrl() });
      const hanging = await endpoint(["release.yanked"], { url: tarpit.url });
      for (const { id } of [closed, hanging]) {
        await admin("POST", `/api/admin/webhook-endpoints/${id}/test`);
      }
      expect(await lenient.app.webhooks.deliverDue()).toBe(2);

      const shown = [];
      for (const { id } of [refused, closed, hanging]) {
        const listed = await admin("GET", `/api/admin/webhook-endpoints/${id}/deliveries`);
        const [delivery] = listed.json<{ items: Array<Record<string, unknown>> }>().items;
        const { status, attempts, responseStatus, durationMs, lastError } = delivery ?? {};
        shown.push({ status, attempts, responseStatus, durationMs, lastError });
        // Each ended at its deadline: the next attempt is as far from the last.
        const wait =
          Date.parse(String(delivery?.nextAttemptAt)) - Date.parse(String(delivery?.lastAttemptAt));
        expect(wait).toBeGreaterThanOrEqual(5_000 + 1_400);
      }
      expect(shown).toEqual(
        Array(3).fill({
          status: "pending",
          attempts: 1,
          responseStatus: null,
          durationMs: null,
          lastError: noAnswer,
        }),
      );
      const why = (log: Array<Record<string, unknown>>) =>
        log
          .filter((line) => line.msg === "webhook delivery failed without an answer")
          .map((line) => line.why);
      expect(why(strict.log)).toEqual([
        expect.stringMatching(
          /^refused: localhost resolves to private address (127\.0\.0\.1|::1)$/,
        ),
      ]);
      expect(why(lenient.log).sort()).toEqual([expect.stringMatching(/ECONNREFUSED/), "timed out"]);
      expect(receiver.received).toEqual([]);
    } finally {
      await tarpit.close();
      await strict.app.close();
      await lenient.app.close();
    }
  });

  it("a delivery in flight is not sent again at once, even when redelivered", async () => {
    const tarpit = await startTarpit();
    try {
      const { id } = await endpoint(["license.created"], { url: tarpit.url });
      await admin("POST", "/api/admin/licenses", { productSlug: f.product.slug, maxMachines: 1 });
      const first = f.app.webhooks.deliverDue();
      while (tarpit.accepted === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      const [row] = await deliveries();
      const again = await admin(
        "POST",
        `/api/admin/webhook-endpoints/${id}/deliveries/${row?.event_id ?? ""}/redeliver`,
      );
      expect(again.statusCode).toBe(202);
      expect(await f.app.webhooks.deliverDue()).toBe(0);
      expect(await first).toBe(1);
      expect(tarpit.accepted).toBe(1);
    } finally {
      await tarpit.close();
    }
  });

  it("follows the retry schedule, then fails; a day of failures disables the endpoint, audited", async () => {
    const { id } = await endpoint(["license.created"]);
    receiver.answer = () => 500;
    await admin("POST", "/api/admin/licenses", { productSlug: f.product.slug, maxMachines: 1 });
    const waits: number[] = [];
    await f.app.webhooks.deliverDue();
    for (;;) {
      const [row] = await deliveries();
      if (!row || row.status !== "pending") break;
      const wait = Number(row.next_attempt_at) - Number(row.last_attempt_at);
      waits.push(wait);
      clock.advance(wait + 1_000);
      expect(await f.app.webhooks.deliverDue()).toBe(1);
    }
    // With the jitter at its middle, each wait is the schedule's (plus the attempt's duration).
    expect(waits).toHaveLength(retryDelaysMs.length);
    waits.forEach((wait, i) => {
      expect(wait).toBeGreaterThanOrEqual(retryDelaysMs[i] ?? 0);
      expect(wait).toBeLessThan((retryDelaysMs[i] ?? 0) + 1_000);
    });
    const [failed] = await deliveries();
    expect(failed).toMatchObject({ status: "failed", attempts: 10 });
    expect(receiver.received).toHaveLength(10);

    // 10 failed attempts over more than a day: below the default of 50, still enabled.
    const kept = await admin("GET", `/api/admin/webhook-endpoints/${id}`);
    expect(kept.json()).toMatchObject({ enabled: true, consecutiveFailures: 10 });
  });

  it("a restart mid-retry loses nothing: the next process sends it, same webhook-id", async () => {
    await endpoint(["license.created"]);
    receiver.answer = () => 503;
    await admin("POST", "/api/admin/licenses", { productSlug: f.product.slug, maxMachines: 1 });
    await f.app.webhooks.deliverDue();
    const [pending] = await deliveries();
    expect(pending).toMatchObject({ status: "pending", attempts: 1 });

    // The next process's clock, a minute after the retry was due.
    const laterClock = manualClock();
    laterClock.advance(clock.now() - Date.now() + 60_000);
    const next = await buildApp({
      database: f.database,
      masterKey,
      webhooks: { allowPrivate: true, now: laterClock.now, timeoutMs: 1_500 },
    });
    try {
      receiver.answer = () => 200;
      expect(await next.webhooks.deliverDue()).toBe(1);
    } finally {
      await next.close();
    }
    expect((await deliveries())[0]).toMatchObject({ status: "delivered", attempts: 2 });
    const ids = new Set(receiver.received.map((hit) => hit.headers["webhook-id"]));
    expect([...ids]).toEqual([pending?.event_id]);
  });

  it("during a secret rotation's grace period both secrets sign", async () => {
    const { id, secret: old } = await endpoint(["license.created"]);
    const rotated = await admin("POST", `/api/admin/webhook-endpoints/${id}/rotate-secret`, {
      graceSeconds: 3600,
    });
    expect(rotated.statusCode).toBe(200);
    const { secret: fresh, previousSecretExpiresAt } = rotated.json<{
      secret: string;
      previousSecretExpiresAt: string;
    }>();
    expect(fresh).not.toBe(old);
    expect(previousSecretExpiresAt).not.toBeNull();
    await admin("POST", "/api/admin/licenses", { productSlug: f.product.slug, maxMachines: 1 });
    await f.app.webhooks.deliverDue();
    const [hit] = receiver.received;
    if (!hit) throw new Error("no delivery");
    const headers = {
      "webhook-id": String(hit.headers["webhook-id"]),
      "webhook-timestamp": String(hit.headers["webhook-timestamp"]),
      "webhook-signature": String(hit.headers["webhook-signature"]),
    };
    expect(headers["webhook-signature"].split(" ")).toHaveLength(2);
    expect(() => new Webhook(old).verify(hit.body, headers)).not.toThrow();
    expect(() => new Webhook(fresh).verify(hit.body, headers)).not.toThrow();
  });

  it("a master key rotation seals the secrets again: the same secret signs", async () => {
    const { secret } = await endpoint(["license.created"]);
    const next = randomBytes(32);
    const cli = { type: "cli" as const, id: null, label: "test", ip: null };
    expect(await resealSecrets(f.db, cli, masterKey, next)).toMatchObject({
      webhookSecrets: 1,
    });
    const rotated = await buildApp({
      database: f.database,
      masterKey: next,
      webhooks: { allowPrivate: true, timeoutMs: 1_500 },
    });
    try {
      await admin("POST", "/api/admin/licenses", { productSlug: f.product.slug, maxMachines: 1 });
      expect(await rotated.webhooks.deliverDue()).toBe(1);
    } finally {
      await rotated.close();
      await resealSecrets(f.db, cli, next, masterKey);
    }
    const [hit] = receiver.received;
    if (!hit) throw new Error("no delivery");
    expect(() =>
      new Webhook(secret).verify(hit.body, {
        "webhook-id": String(hit.headers["webhook-id"]),
        "webhook-timestamp": String(hit.headers["webhook-timestamp"]),
        "webhook-signature": String(hit.headers["webhook-signature"]),
      }),
    ).not.toThrow();
  });

  it("stores the secret sealed, never as given", async () => {
    const { id, secret } = await endpoint(["license.created"]);
    const row = await f.db
      .selectFrom("webhook_endpoints")
      .selectAll()
      .where("id", "=", id)
      .executeTakeFirstOrThrow();
    const bytes = secret.slice("whsec_".length);
    expect(JSON.stringify(row)).not.toContain(bytes);
    expect(JSON.stringify(row)).not.toContain(Buffer.from(bytes, "base64").toString("hex"));
    // Nor do the answers after creation show it.
    const shown = await admin("GET", `/api/admin/webhook-endpoints/${id}`);
    expect(shown.body).not.toContain(bytes);
  });
});
