import http from "node:http";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { type Database, openDatabase } from "../../src/db/database.js";
import {
  abandonedClaimMs,
  claimIdempotencyKey,
  completeIdempotencyKey,
  idempotencyWindowMs,
  releaseIdempotencyKey,
} from "../../src/domain/idempotency/idempotency-keys.js";
import { createLicense } from "../../src/actions/licenses.js";
import { requestFingerprint } from "../../src/http/idempotency.js";
import { adminAccess } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

describe.each(dialects)("Idempotency-Key on the admin API (%s)", (dialect) => {
  let f: Fixture;
  let apiKey: string;
  let cookie: string;
  let csrf: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ apiKey, cookie, csrf } = await adminAccess(f, "idem@example.com"));
  });
  afterAll(async () => {
    await f.close();
  });

  const post = (
    url: string,
    body: unknown,
    key: string | undefined,
    options: { app?: FastifyInstance; session?: boolean; method?: "POST" | "PATCH" } = {},
  ) =>
    (options.app ?? f.app).inject({
      method: options.method ?? "POST",
      url,
      headers: {
        "content-type": "application/json",
        ...(options.session
          ? { cookie, "x-csrf-token": csrf }
          : { authorization: `Bearer ${apiKey}` }),
        ...(key === undefined ? {} : { "idempotency-key": key }),
      },
      payload: JSON.stringify(body),
    });
  const licensesWithNote = async (note: string) =>
    (
      await f.db.selectFrom("licenses").select("license_key").where("note", "=", note).execute()
    ).map((row) => row.license_key);

  it("a retried license creation replays the first answer and creates one license", async () => {
    const body = { productSlug: "desktop-app", maxMachines: 2, note: "order-retried" };
    const first = await post("/api/admin/licenses", body, "order-1001");
    const retry = await post("/api/admin/licenses", body, "order-1001");
    expect(first.statusCode).toBe(201);
    expect(retry.statusCode).toBe(201);
    expect(retry.body).toBe(first.body);
    expect(retry.headers["content-type"]).toBe(first.headers["content-type"]);
    expect(retry.headers["idempotent-replayed"]).toBe("true");
    expect(first.headers["idempotent-replayed"]).toBeUndefined();
    expect(await licensesWithNote("order-retried")).toEqual([first.json().licenseKey]);
  });

  it("the draft's quoted form names the same key", async () => {
    const body = { productSlug: "desktop-app", maxMachines: 1, note: "quoted" };
    const first = await post("/api/admin/licenses", body, '"quoted-key"');
    const retry = await post("/api/admin/licenses", body, "quoted-key");
    expect(retry.body).toBe(first.body);
    expect(await licensesWithNote("quoted")).toHaveLength(1);
  });

  it("without the header every request runs", async () => {
    const body = { productSlug: "desktop-app", maxMachines: 1, note: "no-key" };
    await post("/api/admin/licenses", body, undefined);
    await post("/api/admin/licenses", body, undefined);
    expect(await licensesWithNote("no-key")).toHaveLength(2);
  });

  it("the same key for another body, route or method is a 422", async () => {
    const body = { productSlug: "desktop-app", maxMachines: 1, note: "reused" };
    expect((await post("/api/admin/licenses", body, "reused-key")).statusCode).toBe(201);
    const licenseKey = (await licensesWithNote("reused"))[0] ?? "";
    const attempts = [
      post("/api/admin/licenses", { ...body, maxMachines: 2 }, "reused-key"),
      post("/api/admin/products", { slug: "reused", name: "Reused" }, "reused-key"),
      post(`/api/admin/licenses/${licenseKey}`, { note: "reused" }, "reused-key", {
        method: "PATCH",
      }),
    ];
    for (const response of await Promise.all(attempts)) {
      expect(response.statusCode).toBe(422);
      expect(response.json()).toEqual({
        error: "This Idempotency-Key was used for a different request",
        code: "IDEMPOTENCY_KEY_REUSED",
      });
    }
    expect(await licensesWithNote("reused")).toHaveLength(1);
  });

  it("while the first request runs, the same key is a 409", async () => {
    const body = { slug: "in-flight", name: "In flight" };
    // The first request's claim, as its process holds it while it runs.
    const first = await claimIdempotencyKey(f.db, {
      caller: `api_key:${await apiKeyId()}`,
      key: "in-flight-key",
      fingerprint: requestFingerprint("POST", "/api/admin/products", body),
    });
    expect("claim" in first).toBe(true);
    const second = await post("/api/admin/products", body, "in-flight-key");
    expect(second.statusCode).toBe(409);
    expect(second.json().code).toBe("IDEMPOTENCY_KEY_IN_USE");
    expect(
      await f.db.selectFrom("products").selectAll().where("slug", "=", "in-flight").execute(),
    ).toEqual([]);
  });

  it("concurrent requests with one key, through two apps on one database, make one license", async () => {
    const database: Database = await openDatabase(f.url);
    const second = await buildApp({ database });
    try {
      const body = { productSlug: "desktop-app", maxMachines: 1, note: "concurrent" };
      const responses = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          post("/api/admin/licenses", body, "concurrent-key", {
            app: i % 2 === 0 ? f.app : second,
          }),
        ),
      );
      const created = responses.filter((r) => r.statusCode === 201);
      const busy = responses.filter((r) => r.statusCode === 409);
      expect(created.length + busy.length).toBe(10);
      for (const r of busy) expect(r.json().code).toBe("IDEMPOTENCY_KEY_IN_USE");
      expect(new Set(created.map((r) => r.body)).size).toBe(1);
      expect(await licensesWithNote("concurrent")).toHaveLength(1);
    } finally {
      await second.close();
      await database.close();
    }
  });

  it("a failed request releases its key, so a retry runs", async () => {
    const body = { productSlug: "later-app", maxMachines: 1, note: "after-failure" };
    const failed = await post("/api/admin/licenses", body, "retry-after-404");
    expect(failed.statusCode).toBe(404);
    expect(
      (await post("/api/admin/products", { slug: "later-app", name: "Later" }, undefined))
        .statusCode,
    ).toBe(201);
    const retry = await post("/api/admin/licenses", body, "retry-after-404");
    expect(retry.statusCode).toBe(201);
    expect(retry.headers["idempotent-replayed"]).toBeUndefined();
    expect(await licensesWithNote("after-failure")).toHaveLength(1);
  });

  it("keys are per caller: another caller's key runs its own request", async () => {
    const body = { productSlug: "desktop-app", maxMachines: 1, note: "per-caller" };
    const viaKey = await post("/api/admin/licenses", body, "shared-key");
    const viaSession = await post("/api/admin/licenses", body, "shared-key", { session: true });
    expect(viaKey.statusCode).toBe(201);
    expect(viaSession.statusCode).toBe(201);
    expect(viaSession.json().licenseKey).not.toBe(viaKey.json().licenseKey);
    expect(viaSession.headers["idempotent-replayed"]).toBeUndefined();
    expect(await licensesWithNote("per-caller")).toHaveLength(2);
  });

  it("an API key's secret is never stored; its replay is refused", async () => {
    const body = { name: "webhook-made", scopes: ["licenses:write"] };
    const first = await post("/api/admin/api-keys", body, "new-key-1");
    expect(first.statusCode).toBe(201);
    const secret: string = first.json().key;
    const retry = await post("/api/admin/api-keys", body, "new-key-1");
    expect(retry.statusCode).toBe(409);
    expect(retry.json().code).toBe("IDEMPOTENCY_REPLAY_WITHHELD");
    expect(retry.body).not.toContain(secret);
    const rows = await f.db.selectFrom("idempotency_keys").selectAll().execute();
    expect(rows.some((row) => (row.response_body ?? "").includes(secret))).toBe(false);
    const named = await f.db
      .selectFrom("api_keys")
      .selectAll()
      .where("name", "=", "webhook-made")
      .execute();
    expect(named).toHaveLength(1);
  });

  it.each([
    ["empty", ""],
    ["too long", "k".repeat(256)],
    ["a control character", "tab\there"],
    ["empty quotes", '""'],
  ])("a key that is %s is a 400 naming the header", async (_case, key) => {
    const response = await post("/api/admin/products", { slug: "bad-key", name: "B" }, key);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: "INVALID_FIELD_VALUE" });
    expect(response.json().error).toContain("Idempotency-Key");
  });

  it("a key given twice is a 400", async () => {
    // Over a socket: two header lines on the wire, as a client sends them.
    const address = await f.app.listen({ port: 0, host: "127.0.0.1" });
    const response = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = http.request(`${address}/api/admin/products`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${apiKey}`,
          "idempotency-key": ["a", "b"],
        },
      });
      request.on("response", (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      request.on("error", reject);
      request.end(JSON.stringify({ slug: "twice", name: "Twice" }));
    });
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body).error).toContain("Idempotency-Key");
  });

  it("an answer is replayed for 24 h; an unanswered claim is taken over after a while", async () => {
    const request = { caller: "api_key:clock", key: "k", fingerprint: "f" };
    const now = Date.now();
    const first = await claimIdempotencyKey(f.db, request, now);
    if (!("claim" in first)) throw new Error("not claimed");
    await completeIdempotencyKey(f.db, first.claim, { statusCode: 201, headers: {}, body: "{}" });
    const replay = await claimIdempotencyKey(f.db, request, now + idempotencyWindowMs - 1);
    expect(replay).toEqual({ replay: { statusCode: 201, headers: {}, body: "{}" } });
    const later = await claimIdempotencyKey(f.db, request, now + idempotencyWindowMs);
    expect("claim" in later).toBe(true);

    const abandoned = { ...request, key: "abandoned" };
    await claimIdempotencyKey(f.db, abandoned, now);
    await expect(claimIdempotencyKey(f.db, abandoned, now + abandonedClaimMs - 1)).rejects.toThrow(
      /still running/,
    );
    expect("claim" in (await claimIdempotencyKey(f.db, abandoned, now + abandonedClaimMs))).toBe(
      true,
    );
  });

  it("a write that committed is never run again, even when its answer was never stored", async () => {
    const request = {
      caller: "api_key:crash",
      key: "order-2001",
      fingerprint: requestFingerprint("POST", "/api/admin/licenses", {}),
    };
    const now = Date.now();
    const claimed = await claimIdempotencyKey(f.db, request, now);
    if (!("claim" in claimed)) throw new Error("not claimed");
    // The write commits with its audit entry under the claim; the process then dies before the
    // answer is stored (completeIdempotencyKey never runs).
    const actor = { type: "api_key", id: "crash", label: "ci", ip: null } as const;
    await createLicense(
      f.db,
      actor,
      { productSlug: "desktop-app", maxMachines: 1, note: "order-2001" },
      claimed.claim,
    );
    // A failure reported after the commit does not give the key up either.
    await releaseIdempotencyKey(f.db, claimed.claim);
    await expect(claimIdempotencyKey(f.db, request, now + 1000)).rejects.toThrow(/still running/);
    const retried = claimIdempotencyKey(f.db, request, now + abandonedClaimMs);
    await expect(retried).rejects.toMatchObject({
      code: "IDEMPOTENCY_REPLAY_WITHHELD",
      message: expect.stringMatching(/applied, but the server stopped before storing its answer/),
    });
    expect(await licensesWithNote("order-2001")).toHaveLength(1);

    // A write that did not commit leaves the claim to be taken over, as before.
    const rolledBack = { ...request, key: "order-2002" };
    const second = await claimIdempotencyKey(f.db, rolledBack, now);
    if (!("claim" in second)) throw new Error("not claimed");
    await expect(
      createLicense(f.db, actor, { productSlug: "no-such-product", maxMachines: 1 }, second.claim),
    ).rejects.toMatchObject({ code: "PRODUCT_NOT_FOUND" });
    expect("claim" in (await claimIdempotencyKey(f.db, rolledBack, now + abandonedClaimMs))).toBe(
      true,
    );
  });

  const apiKeyId = async () => {
    const row = await f.db
      .selectFrom("api_keys")
      .select("id")
      .where("name", "=", "all")
      .executeTakeFirstOrThrow();
    return row.id;
  };
});
