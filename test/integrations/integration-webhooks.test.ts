import { createHmac, randomBytes } from "node:crypto";
import Stripe from "stripe";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { connectPaymentProvider, addSigningSecret } from "../../src/actions/integrations.js";
import { prune } from "../../src/domain/maintenance/prune.js";
import { buildApp } from "../../src/app.js";
import type { IntegrationProvider } from "../../src/contracts/vocabulary.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

const masterKey = randomBytes(32);
const cli = { type: "cli" as const, id: null, label: "test", ip: null };
const start = Date.parse("2026-12-01T12:00:00Z");

/** Paddle-Signature as Paddle's docs specify: ts=<unix>;h1=<hex HMAC-SHA256 of "ts:body">. */
const paddleSignature = (secret: string, ts: number, body: string) =>
  createHmac("sha256", secret).update(`${ts}:${body}`).digest("hex");
/** X-Signature as Lemon Squeezy's docs specify: the hex HMAC-SHA256 of the raw body. */
const lemonSignature = (secret: string, body: string) =>
  createHmac("sha256", secret).update(body).digest("hex");

describe.each(dialects)("payment integrations: webhooks and the ledger (%s)", (dialect) => {
  let f: Fixture;
  let apiKey: string;
  let now = start;
  beforeAll(async () => {
    f = await createFixture(dialect, { masterKey, integrations: { now: () => now } });
    apiKey = (await adminAccess(f, "ledger@example.com")).apiKey;
  });
  afterAll(async () => {
    await f.close();
  });
  beforeEach(async () => {
    now = start;
    await f.db.deleteFrom("integrations").execute();
  });

  async function integration(
    provider: IntegrationProvider,
    secret: string,
    mode: "live" | "test" = "live",
  ) {
    const created = await connectPaymentProvider(
      f.db,
      cli,
      masterKey,
      { product: f.product.slug, provider, mode, secret },
      "",
    );
    return created.id;
  }

  const send = (
    provider: IntegrationProvider,
    id: string,
    body: string,
    headers: Record<string, string>,
  ) =>
    f.app.inject({
      method: "POST",
      url: `/api/integrations/${provider}/${id}/webhook`,
      headers: { "content-type": "application/json; charset=utf-8", ...headers },
      payload: body,
    });

  const events = (id: string) =>
    f.db.selectFrom("integration_events").selectAll().where("integration_id", "=", id).execute();

  const stripeEvent = (id: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      id,
      object: "event",
      type: "customer.created",
      livemode: true,
      created: Math.floor(now / 1000),
      data: { object: { id: "cus_1", object: "customer", email: "ada@example.com" } },
      ...extra,
    });
  const stripeHeader = (body: string, secret: string, timestamp = Math.floor(now / 1000)) =>
    Stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp });

  describe("Stripe, through the stripe library", () => {
    it("a signed event is recorded once; a copy is a duplicate that changes nothing", async () => {
      const id = await integration("stripe", "whsec_stripe_secret");
      const body = stripeEvent("evt_1");
      const first = await send("stripe", id, body, {
        "stripe-signature": stripeHeader(body, "whsec_stripe_secret"),
      });
      expect(first.statusCode, first.body).toBe(200);
      expect(first.json()).toEqual({ received: true, status: "ignored" });
      const again = await send("stripe", id, body, {
        "stripe-signature": stripeHeader(body, "whsec_stripe_secret"),
      });
      expect(again.json()).toEqual({ received: true, status: "duplicate" });
      const rows = await events(id);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({
        event_key: "evt_1",
        event_type: "customer.created",
        object_id: "cus_1",
        livemode: 1,
        status: "ignored",
        reason: "Shipkey does not act on customer.created events",
        body,
      });
    });

    it("missing, wrong or stale signatures are 400 and record nothing", async () => {
      const id = await integration("stripe", "whsec_stripe_secret");
      const body = stripeEvent("evt_2");
      const cases: Array<[Record<string, string>, string]> = [
        [{}, "WEBHOOK_SIGNATURE_MISSING"],
        [{ "stripe-signature": stripeHeader(body, "whsec_other") }, "WEBHOOK_SIGNATURE_INVALID"],
        [{ "stripe-signature": "t=1,v0=abc" }, "WEBHOOK_SIGNATURE_INVALID"],
        [
          { "stripe-signature": stripeHeader(body, "whsec_stripe_secret", now / 1000 - 301) },
          "WEBHOOK_TIMESTAMP_STALE",
        ],
      ];
      for (const [headers, code] of cases) {
        const response = await send("stripe", id, body, headers);
        expect(response.statusCode, code).toBe(400);
        expect(response.json().code).toBe(code);
      }
      // The body changed after it was signed.
      const tampered = await send("stripe", id, body.replace("ada@", "eve@"), {
        "stripe-signature": stripeHeader(body, "whsec_stripe_secret"),
      });
      expect(tampered.json().code).toBe("WEBHOOK_SIGNATURE_INVALID");
      // Within the tolerance (300 s) is accepted.
      const recent = await send("stripe", id, body, {
        "stripe-signature": stripeHeader(body, "whsec_stripe_secret", now / 1000 - 299),
      });
      expect(recent.statusCode).toBe(200);
      expect(await events(id)).toHaveLength(1);
    });

    it("a signed body that is not JSON is 400 INVALID_JSON and records nothing", async () => {
      const id = await integration("stripe", "whsec_stripe_secret");
      const response = await send("stripe", id, "not json", {
        "stripe-signature": stripeHeader("not json", "whsec_stripe_secret"),
      });
      expect(response.statusCode).toBe(400);
      expect(response.json().code).toBe("INVALID_JSON");
      expect(await events(id)).toEqual([]);
    });

    it("during a rotation either secret verifies, and any v1 of the header may match", async () => {
      const id = await integration("stripe", "whsec_old_secret");
      await addSigningSecret(f.db, cli, masterKey, id, "whsec_new_secret", "");
      const a = stripeEvent("evt_old");
      const b = stripeEvent("evt_new");
      expect(
        (await send("stripe", id, a, { "stripe-signature": stripeHeader(a, "whsec_old_secret") }))
          .statusCode,
      ).toBe(200);
      expect(
        (await send("stripe", id, b, { "stripe-signature": stripeHeader(b, "whsec_new_secret") }))
          .statusCode,
      ).toBe(200);
      // Stripe signs with both secrets during its own rotation: two v1 values.
      const c = stripeEvent("evt_both");
      const t = Math.floor(now / 1000);
      const wrong = createHmac("sha256", "whsec_unknown").update(`${t}.${c}`).digest("hex");
      const right = createHmac("sha256", "whsec_new_secret").update(`${t}.${c}`).digest("hex");
      const both = await send("stripe", id, c, {
        "stripe-signature": `t=${t},v1=${wrong},v1=${right}`,
      });
      expect(both.statusCode).toBe(200);
    });

    it("a test-mode event on a live integration is acknowledged, ignored with a reason", async () => {
      const id = await integration("stripe", "whsec_stripe_secret");
      const body = stripeEvent("evt_test", { livemode: false, type: "checkout.session.completed" });
      const response = await send("stripe", id, body, {
        "stripe-signature": stripeHeader(body, "whsec_stripe_secret"),
      });
      expect(response.json()).toEqual({ received: true, status: "ignored" });
      expect((await events(id))[0]?.reason).toBe(
        "a test-mode event on an integration in live mode",
      );
      const testing = await integration("stripe", "whsec_test_secret", "test");
      const live = stripeEvent("evt_live");
      await send("stripe", testing, live, {
        "stripe-signature": stripeHeader(live, "whsec_test_secret"),
      });
      expect((await events(testing))[0]?.reason).toBe(
        "a live-mode event on an integration in test mode",
      );
    });
  });

  describe("Paddle, verified by Shipkey", () => {
    const paddleEvent = (eventId: string) =>
      JSON.stringify({
        event_id: eventId,
        event_type: "customer.created",
        occurred_at: "2026-12-01T12:00:00.000Z",
        notification_id: "ntf_1",
        data: { id: "ctm_1", email: "ada@example.com" },
      });

    it("ts:body HMAC-SHA256, any h1, within 5 s", async () => {
      const id = await integration("paddle", "pdl_ntfset_secret");
      const ts = Math.floor(now / 1000);
      const a = paddleEvent("evt_p1");
      const ok = await send("paddle", id, a, {
        "paddle-signature": `ts=${ts};h1=${paddleSignature("pdl_ntfset_secret", ts, a)}`,
      });
      expect(ok.statusCode, ok.body).toBe(200);
      expect((await events(id))[0]).toMatchObject({
        event_key: "evt_p1",
        object_id: "ctm_1",
        livemode: null,
        occurred_at: Date.parse("2026-12-01T12:00:00.000Z"),
      });
      // Paddle's rotation: an h1 per secret; Shipkey accepts any of them (the SDK only the last).
      const b = paddleEvent("evt_p2");
      const good = paddleSignature("pdl_ntfset_secret", ts, b);
      const other = paddleSignature("pdl_ntfset_retired", ts, b);
      for (const header of [`ts=${ts};h1=${good};h1=${other}`, `ts=${ts};h1=${other};h1=${good}`]) {
        expect((await send("paddle", id, b, { "paddle-signature": header })).statusCode).toBe(200);
      }
      expect((await events(id)).map((e) => e.event_key).sort()).toEqual(["evt_p1", "evt_p2"]);
    });

    it("a wrong, malformed or 6 s old signature is 400", async () => {
      const id = await integration("paddle", "pdl_ntfset_secret");
      const body = paddleEvent("evt_p3");
      const ts = Math.floor(now / 1000);
      const cases: Array<[string | undefined, string]> = [
        [undefined, "WEBHOOK_SIGNATURE_MISSING"],
        [`ts=${ts};h1=${paddleSignature("wrong", ts, body)}`, "WEBHOOK_SIGNATURE_INVALID"],
        [`h1=${paddleSignature("pdl_ntfset_secret", ts, body)}`, "WEBHOOK_SIGNATURE_INVALID"],
        [`ts=${ts}`, "WEBHOOK_SIGNATURE_INVALID"],
        [
          `ts=${ts - 6};h1=${paddleSignature("pdl_ntfset_secret", ts - 6, body)}`,
          "WEBHOOK_TIMESTAMP_STALE",
        ],
        [
          `ts=${ts + 6};h1=${paddleSignature("pdl_ntfset_secret", ts + 6, body)}`,
          "WEBHOOK_TIMESTAMP_STALE",
        ],
      ];
      for (const [header, code] of cases) {
        const response = await send(
          "paddle",
          id,
          body,
          header === undefined ? {} : { "paddle-signature": header },
        );
        expect(response.statusCode, code).toBe(400);
        expect(response.json().code).toBe(code);
      }
      const fiveSecondsOld = `ts=${ts - 5};h1=${paddleSignature("pdl_ntfset_secret", ts - 5, body)}`;
      expect(
        (await send("paddle", id, body, { "paddle-signature": fiveSecondsOld })).statusCode,
      ).toBe(200);
      expect(await events(id)).toHaveLength(1);
    });
  });

  describe("Lemon Squeezy, verified by Shipkey", () => {
    const lemonEvent = (updatedAt: string) =>
      JSON.stringify({
        meta: { event_name: "license_key_created", test_mode: false },
        data: { type: "license-keys", id: "77", attributes: { updated_at: updatedAt } },
      });

    it("X-Signature is the hex HMAC of the body; the key is a digest of name, object and updated_at", async () => {
      const id = await integration("lemonsqueezy", "my-ls-secret");
      const body = lemonEvent("2026-12-01T12:00:00.000000Z");
      const ok = await send("lemonsqueezy", id, body, {
        "x-signature": lemonSignature("my-ls-secret", body),
      });
      expect(ok.json()).toEqual({ received: true, status: "ignored" });
      const copy = await send("lemonsqueezy", id, body, {
        "x-signature": lemonSignature("my-ls-secret", body),
      });
      expect(copy.json()).toEqual({ received: true, status: "duplicate" });
      const later = lemonEvent("2026-12-01T12:05:00.000000Z");
      await send("lemonsqueezy", id, later, {
        "x-signature": lemonSignature("my-ls-secret", later),
      });
      const rows = await events(id);
      expect(rows).toHaveLength(2);
      for (const row of rows) expect(row.event_key).toMatch(/^ls_[0-9a-f]{64}$/);
      const wrong = await send("lemonsqueezy", id, body, {
        "x-signature": lemonSignature("other", body),
      });
      expect(wrong.json().code).toBe("WEBHOOK_SIGNATURE_INVALID");
      const missing = await send("lemonsqueezy", id, body, {});
      expect(missing.json().code).toBe("WEBHOOK_SIGNATURE_MISSING");
    });
  });

  describe("the route", () => {
    it("20 concurrent copies of one event: one row, one non-duplicate answer", async () => {
      const id = await integration("stripe", "whsec_stripe_secret");
      const body = stripeEvent("evt_race");
      const header = stripeHeader(body, "whsec_stripe_secret");
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => send("stripe", id, body, { "stripe-signature": header })),
      );
      expect(answers.map((a) => a.statusCode)).toEqual(Array(20).fill(200));
      const statuses = answers.map((a) => a.json<{ status: string }>().status);
      expect(statuses.filter((s) => s !== "duplicate")).toEqual(["ignored"]);
      expect(await events(id)).toHaveLength(1);
    });

    it("keeps the raw bytes whatever the Content-Type; bounds the size; 404 for another provider", async () => {
      const id = await integration("lemonsqueezy", "my-ls-secret");
      const body = ` {"meta":{"event_name":"x","test_mode":false},"data":{"type":"t","id":"1"}}\n`;
      const plain = await f.app.inject({
        method: "POST",
        url: `/api/integrations/lemonsqueezy/${id}/webhook`,
        headers: {
          "content-type": "text/plain",
          "x-signature": lemonSignature("my-ls-secret", body),
        },
        payload: body,
      });
      expect(plain.statusCode, plain.body).toBe(200);
      expect((await events(id))[0]?.body).toBe(body);
      const big = "x".repeat(600 * 1024);
      const tooLarge = await send("lemonsqueezy", id, big, {
        "x-signature": lemonSignature("my-ls-secret", big),
      });
      expect(tooLarge.statusCode).toBe(413);
      const elsewhere = await send("stripe", id, body, { "stripe-signature": "t=1,v1=00" });
      expect(elsewhere.statusCode).toBe(404);
      expect(elsewhere.json().code).toBe("INTEGRATION_NOT_FOUND");
      expect((await send("stripe", "int_nope", body, {})).json().code).toBe(
        "INTEGRATION_NOT_FOUND",
      );
      // The raw parser is the integration routes' only: the admin API still refuses text/plain.
      const admin = await f.app.inject({
        method: "POST",
        url: "/api/admin/integrations",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "text/plain" },
        payload: "{}",
      });
      expect(admin.statusCode).toBe(415);
    });

    it("logs neither the raw body nor a secret, at trace level", async () => {
      const id = await integration("stripe", "whsec_never_logged");
      const lines: string[] = [];
      const app = await buildApp({
        database: f.database,
        masterKey,
        logger: { level: "trace", stream: { write: (line: string) => void lines.push(line) } },
        integrations: { now: () => now },
      });
      try {
        const body = stripeEvent("evt_logged", { data: { object: { id: "cus_secretive_body" } } });
        for (const secret of ["whsec_never_logged", "whsec_wrong"]) {
          await app.inject({
            method: "POST",
            url: `/api/integrations/stripe/${id}/webhook`,
            headers: {
              "content-type": "application/json",
              "stripe-signature": stripeHeader(body, secret),
            },
            payload: body,
          });
        }
        await app.inject({
          method: "POST",
          url: `/api/integrations/stripe/${id}/webhook`,
          headers: { "content-type": "application/json", "stripe-signature": "t=1,v1=00" },
          payload: "not json cus_secretive_body",
        });
      } finally {
        await app.close();
      }
      expect(lines.length).toBeGreaterThan(0);
      const log = lines.join("\n");
      expect(log).not.toContain("cus_secretive_body");
      expect(log).not.toContain("whsec_");
    });

    it("admins list events, see why one was ignored, replay it; pruning empties old bodies", async () => {
      const id = await integration("stripe", "whsec_stripe_secret");
      const body = stripeEvent("evt_list");
      await send("stripe", id, body, {
        "stripe-signature": stripeHeader(body, "whsec_stripe_secret"),
      });
      const admin = (method: "GET" | "POST", url: string) => callWithApiKey(f, apiKey, method, url);
      const list = await admin("GET", `/api/admin/integrations/${id}/events?status=ignored`);
      expect(list.statusCode).toBe(200);
      const [event] = list.json<{ items: Array<{ id: string }> }>().items;
      expect(event).toMatchObject({
        eventKey: "evt_list",
        eventType: "customer.created",
        status: "ignored",
        reason: "Shipkey does not act on customer.created events",
        bodyKept: true,
        livemode: true,
      });
      expect(list.body).not.toContain("ada@example.com");
      const one = await admin("GET", `/api/admin/integrations/${id}/events/${event?.id}`);
      expect(one.json()).toMatchObject({ id: event?.id, status: "ignored" });
      const replayed = await admin(
        "POST",
        `/api/admin/integrations/${id}/events/${event?.id}/replay`,
      );
      expect(replayed.statusCode, replayed.body).toBe(200);
      expect(replayed.json()).toMatchObject({ status: "ignored", attempts: 2 });
      const audit = await f.db
        .selectFrom("audit_log")
        .select("details")
        .where("action", "=", "integration.replay_event")
        .where("target_id", "=", id)
        .executeTakeFirstOrThrow();
      expect(JSON.parse(audit.details)).toEqual({
        eventId: event?.id,
        eventType: "customer.created",
        status: "ignored",
      });

      expect(
        (
          await prune(f.db, {
            activationHistoryMs: 0,
            integrationEventBodyMs: 1000,
            now: start + 999,
          })
        ).integrationEventBodies,
      ).toBe(0);
      expect(
        (
          await prune(f.db, {
            activationHistoryMs: 0,
            integrationEventBodyMs: 1000,
            now: start + 1000,
          })
        ).integrationEventBodies,
      ).toBe(1);
      const [kept] = await events(id);
      expect(kept).toMatchObject({ body: null, event_key: "evt_list" });
      const gone = await admin("POST", `/api/admin/integrations/${id}/events/${event?.id}/replay`);
      expect(gone.statusCode).toBe(409);
      expect(gone.json().code).toBe("INTEGRATION_EVENT_NOT_REPLAYABLE");
      // The row stays: a late copy is still a duplicate.
      const late = await send("stripe", id, body, {
        "stripe-signature": stripeHeader(body, "whsec_stripe_secret"),
      });
      expect(late.json().status).toBe("duplicate");
      const missing = await admin("GET", `/api/admin/integrations/${id}/events/ine_nope`);
      expect(missing.json().code).toBe("INTEGRATION_EVENT_NOT_FOUND");
    });
  });
});
