import { adminAccess } from "../helpers/admin-access.js";
import { spawn } from "node:child_process";
import { randomInt } from "node:crypto";
import { once } from "node:events";
import net from "node:net";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import { defaultRateLimits, type RateLimitSettings } from "../../src/http/rate-limits.js";
import { loadConfig } from "../../src/config.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

const fixtures: Fixture[] = [];
afterEach(async () => {
  for (const f of fixtures.splice(0)) await f.close();
});

const perMinute = (max: number) => ({ max, windowMs: 60_000 });

async function fixture(
  dialect: "sqlite" | "postgres",
  limits: Partial<RateLimitSettings>,
  redisUrl: string | null = null,
) {
  const f = await createFixture(dialect, {
    rateLimits: { ...defaultRateLimits, ...limits },
    redisUrl,
  });
  fixtures.push(f);
  return f;
}

/** A client address of its own, so counts kept in Redis by earlier runs do not interfere. */
const someAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;

function validate(f: Fixture, licenseKey: string, address: string) {
  return f.app.inject({
    method: "POST",
    url: "/api/license/validate",
    remoteAddress: address,
    headers: { "content-type": "application/json" },
    payload: { licenseKey, machineId: "machine-1", productSlug: f.product.slug },
  });
}

function publish(f: Fixture, apiKey: string, version: string) {
  return f.app.inject({
    method: "POST",
    url: "/api/releases/publish",
    headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
    payload: {
      productSlug: f.product.slug,
      version,
      channel: "STABLE",
      releases: [{ platform: "LINUX", arch: "X64", downloadUrl: "https://example.com/app.tar.gz" }],
    },
  });
}

describe.each(dialects)("rate limits (%s)", (dialect) => {
  it("license endpoints: per client address, with the failure flag, Retry-After and RateLimit headers", async () => {
    const f = await fixture(dialect, { license: perMinute(3) });
    const key = await f.createLicense();
    const address = someAddress();
    for (let i = 0; i < 3; i++) {
      const ok = await validate(f, key, address);
      expect(ok.statusCode).not.toBe(429);
      // An app's answers stay as the spec has them; only a refusal describes the limit.
      expect(ok.headers["ratelimit-policy"]).toBeUndefined();
    }
    const limited = await validate(f, key, address);
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({
      error: "Too many requests",
      code: "RATE_LIMITED",
      valid: false,
    });
    expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
    expect(Number(limited.headers["retry-after"])).toBeLessThanOrEqual(60);
    expect(limited.headers["ratelimit-policy"]).toBe('"license";q=3;w=60');
    expect(limited.headers.ratelimit).toMatch(/^"license";r=0;t=\d+$/);

    const activate = await f.app.inject({
      method: "POST",
      url: "/api/license/activate",
      remoteAddress: address,
      headers: { "content-type": "application/json" },
      payload: { licenseKey: key, machineId: "m", productSlug: f.product.slug },
    });
    expect(activate.statusCode).toBe(429);
    expect(activate.json()).toMatchObject({ code: "RATE_LIMITED", success: false });

    // Another address has a budget of its own.
    expect((await validate(f, key, someAddress())).statusCode).not.toBe(429);
  });

  it("update feeds and downloads: per client address, a budget apart from the license endpoints'", async () => {
    const f = await fixture(dialect, { updates: perMinute(3) });
    const key = await f.createLicense();
    const address = someAddress();
    const feed = (url: string) => f.app.inject({ method: "GET", url, remoteAddress: address });
    const slug = f.product.slug;
    const urls = [
      `/api/updates/${slug}/latest?platform=WINDOWS&arch=X64`,
      `/api/updates/${slug}/tauri/windows/x86_64/1.0.0`,
      `/api/downloads/${slug}/1.0.0/WINDOWS/X64`,
    ];
    for (const url of urls) {
      const answer = await feed(url);
      expect(answer.statusCode, url).not.toBe(429);
      expect(answer.headers["ratelimit-policy"]).toBeUndefined();
    }
    const limited = await feed(`/api/updates/${slug}/electron/latest.yml`);
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({ error: "Too many requests", code: "RATE_LIMITED" });
    expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
    expect(limited.headers["ratelimit-policy"]).toBe('"updates";q=3;w=60');
    expect(limited.headers["cache-control"]).toBe("no-cache");
    expect((await feed(`/api/downloads/${slug}/1.0.0/WINDOWS/X64`)).statusCode).toBe(429);
    // The license endpoints keep their own budget; another address has its own.
    expect((await validate(f, key, address)).statusCode).not.toBe(429);
    const other = await f.app.inject({
      method: "GET",
      url: urls[0] ?? "",
      remoteAddress: someAddress(),
    });
    expect(other.statusCode).not.toBe(429);
  });

  it("unknown license keys: past the budget, every license request of the address is refused", async () => {
    const f = await fixture(dialect, { unknownKey: perMinute(3) });
    const key = await f.createLicense();
    const guesser = someAddress();
    for (let i = 0; i < 3; i++) {
      expect((await validate(f, `GUESS-${i}-0000000000000000`, guesser)).statusCode).toBe(404);
    }
    // Even a real key: the answer must not tell a guessed key from a wrong one.
    const refused = await validate(f, key, guesser);
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({ code: "RATE_LIMITED", valid: false });
    expect(refused.headers["ratelimit"]).toContain('"unknown-key";r=0;');
    // Known keys do not spend the budget; other addresses are unaffected.
    const customer = someAddress();
    for (let i = 0; i < 5; i++) expect((await validate(f, key, customer)).statusCode).toBe(403);
    expect((await validate(f, "GUESS-X-0000000000000000", customer)).statusCode).toBe(404);
  });

  it("invalid API keys spend the same budget: then invalid keys and the license endpoints are refused, never a valid key", async () => {
    const f = await fixture(dialect, { unknownKey: perMinute(3) });
    const address = someAddress();
    const call = (method: "GET" | "POST", url: string, apiKey: string) =>
      f.app.inject({
        method,
        url,
        remoteAddress: address,
        headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
        ...(method === "POST" ? { payload: {} } : {}),
      });
    expect((await call("POST", "/api/releases/publish", "shk_guess-1")).statusCode).toBe(401);
    expect((await call("GET", "/api/admin/products", "shk_guess-2")).statusCode).toBe(401);
    expect((await call("POST", "/api/releases/publish", "shk_guess-3")).statusCode).toBe(401);
    const refused = await call("POST", "/api/releases/publish", "shk_guess-4");
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toEqual({ error: "Too many requests", code: "RATE_LIMITED" });
    expect(refused.headers["ratelimit-policy"]).toBe('"unknown-key";q=3;w=60');
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    expect((await call("GET", "/api/admin/products", "shk_guess-5")).statusCode).toBe(429);
    expect((await validate(f, await f.createLicense(), address)).statusCode).toBe(429);
    // CI behind the same address (a shared NAT) with a valid key is never locked out.
    const ci = await call("POST", "/api/releases/publish", f.publishKey);
    expect(ci.statusCode).toBe(400); // the empty body's "Missing required fields", not 429
    expect(ci.headers["ratelimit-policy"]).not.toContain("unknown-key");
    const { apiKey } = await adminAccess(f, "neighbour@example.com");
    expect((await call("GET", "/api/admin/products", apiKey)).statusCode).toBe(200);
  });

  it("publish: per API key", async () => {
    const f = await fixture(dialect, { publish: perMinute(2) });
    const other = (await createApiKey(f.db, { name: "ci-2", scopes: ["releases:write"] })).key;
    expect((await publish(f, f.publishKey, "1.0.0")).statusCode).toBe(200);
    expect((await publish(f, f.publishKey, "1.0.1")).statusCode).toBe(200);
    const limited = await publish(f, f.publishKey, "1.0.2");
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({ error: "Too many requests", code: "RATE_LIMITED" });
    expect(limited.headers["ratelimit-policy"]).toBe('"publish";q=2;w=60');
    expect((await publish(f, other, "1.0.2")).statusCode).toBe(200);
  });

  it("admin API: per API key", async () => {
    const f = await fixture(dialect, { admin: perMinute(2) });
    const reader = (await createApiKey(f.db, { name: "r", scopes: ["products:read"] })).key;
    const list = (key: string) =>
      f.app.inject({
        method: "GET",
        url: "/api/admin/products",
        headers: { authorization: `Bearer ${key}` },
      });
    expect((await list(reader)).statusCode).toBe(200);
    expect((await list(reader)).statusCode).toBe(200);
    const limited = await list(reader);
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({ error: "Too many requests", code: "RATE_LIMITED" });
    const another = (await createApiKey(f.db, { name: "r2", scopes: ["products:read"] })).key;
    expect((await list(another)).statusCode).toBe(200);
  });
});

describe("rate limits off", () => {
  it("RATE_LIMITS=off: no limit and no RateLimit headers", async () => {
    const f = await createFixture("sqlite", { rateLimits: "off" });
    fixtures.push(f);
    const key = await f.createLicense();
    for (let i = 0; i < 30; i++) {
      const response = await validate(f, `GUESS-${i}-0000000000000000`, "10.0.0.1");
      expect(response.statusCode).toBe(404);
      expect(response.headers["ratelimit"]).toBeUndefined();
    }
    expect((await validate(f, key, "10.0.0.1")).statusCode).toBe(403);
  });
});

describe("rate-limit configuration", () => {
  it("defaults, one variable per limit, and the off switch", () => {
    expect(loadConfig({}).rateLimits).toEqual(defaultRateLimits);
    expect(loadConfig({ RATE_LIMITS: "off" }).rateLimits).toBe("off");
    const custom = loadConfig({
      RATE_LIMIT_LICENSE: "1000/30s",
      RATE_LIMIT_UPDATES: "20/1m",
      RATE_LIMIT_UNKNOWN_KEY: "5/1h",
      RATE_LIMIT_PUBLISH: "10/1m",
      RATE_LIMIT_ADMIN: "50/2m",
    }).rateLimits;
    expect(custom).toEqual({
      license: { max: 1000, windowMs: 30_000 },
      updates: { max: 20, windowMs: 60_000 },
      unknownKey: { max: 5, windowMs: 3_600_000 },
      publish: { max: 10, windowMs: 60_000 },
      admin: { max: 50, windowMs: 120_000 },
    });
    expect(() => loadConfig({ RATE_LIMIT_ADMIN: "0/1m" })).toThrow(/RATE_LIMIT_ADMIN/);
    expect(() => loadConfig({ RATE_LIMIT_ADMIN: "10/25h" })).toThrow(/RATE_LIMIT_ADMIN/);
  });
});

const redisUrl = process.env.TEST_REDIS_URL;

describe.skipIf(!redisUrl)("rate limits in Redis", () => {
  it("two processes sharing REDIS_URL enforce one limit", async () => {
    const one = await fixture("sqlite", { license: perMinute(4) }, redisUrl ?? null);
    const two = await fixture("sqlite", { license: perMinute(4) }, redisUrl ?? null);
    // A process counts on its own until its Redis connection opens: both count in Redis first.
    await countingInRedis(one);
    await countingInRedis(two);
    const address = someAddress();
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      statuses.push((await validate(one, "K-0000000000000000", address)).statusCode);
      statuses.push((await validate(two, "K-0000000000000000", address)).statusCode);
    }
    expect(statuses).toEqual([404, 404, 404, 404, 429, 429]);
  });

  it("counts under clean key names: shipkey:rate-limit:<limit>|<address>", async () => {
    const f = await fixture("sqlite", { license: perMinute(4) }, redisUrl ?? null);
    const address = someAddress();
    const client = new Redis(redisUrl ?? "");
    try {
      // The first requests may be counted in the process while its connection opens.
      await waitFor(async () => {
        await validate(f, "K-0000000000000000", address);
        return (await client.get(`shipkey:rate-limit:license|${address}`)) !== null;
      });
      for (const key of await client.keys(`*${address}*`)) {
        expect(key).toMatch(/^shipkey:rate-limit:(license|updates|unknownKey)\|10\./);
      }
    } finally {
      client.disconnect();
    }
  });
});

describe("rate limits while Redis is away", () => {
  it("unreachable from the start: each process counts on its own, without waiting", async () => {
    const f = await fixture("sqlite", { license: perMinute(1) }, "redis://127.0.0.1:1");
    const started = Date.now();
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      statuses.push((await validate(f, "K-0000000000000000", "10.9.9.9")).statusCode);
    }
    expect(statuses).toEqual([404, 429, 429]);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("lost, then back: counts in this process meanwhile, in Redis again once it answers", async () => {
    const port = await freePort();
    const start = () =>
      spawn(
        "redis-server",
        ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        {
          stdio: "ignore",
        },
      );
    let server = start();
    const url = `redis://127.0.0.1:${port}`;
    const client = new Redis(url, { retryStrategy: () => 50 });
    client.on("error", () => undefined);
    try {
      expect(await client.ping()).toBe("PONG");
      const f = await fixture("sqlite", { license: perMinute(2) }, url);
      await waitFor(async () => {
        await validate(f, "K-0000000000000000", "10.7.7.1");
        return (await client.get("shipkey:rate-limit:license|10.7.7.1")) !== null;
      });
      server.kill("SIGKILL");
      await once(server, "exit");
      // Away: this process limits on its own (2 per minute for a new address).
      const away = [];
      for (let i = 0; i < 3; i++)
        away.push((await validate(f, "K-0000000000000000", "10.7.7.2")).statusCode);
      expect(away).toEqual([404, 404, 429]);
      server = start();
      // Back: the next counts land in Redis again.
      await waitFor(async () => {
        await validate(f, "K-0000000000000000", "10.7.7.3");
        return (await client.get("shipkey:rate-limit:license|10.7.7.3").catch(() => null)) !== null;
      });
    } finally {
      client.disconnect();
      server.kill("SIGKILL");
    }
  });
});

async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as net.AddressInfo;
  server.close();
  return port;
}

/** Resolves once `f` counts in Redis: a request from a throwaway address leaves its key there. */
async function countingInRedis(f: Fixture): Promise<void> {
  const client = new Redis(redisUrl ?? "");
  const address = someAddress();
  try {
    await waitFor(async () => {
      await validate(f, "K-0000000000000000", address);
      return (await client.get(`shipkey:rate-limit:license|${address}`)) !== null;
    });
  } finally {
    client.disconnect();
  }
}

async function waitFor(check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
