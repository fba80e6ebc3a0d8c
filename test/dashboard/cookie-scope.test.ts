import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FastifyInstance } from "fastify";
import { buildApp } from "../../src/app.js";
import { openTestDatabase } from "../helpers/database.js";

// Cookies are read only by the dashboard and the admin API (the dashboard session), so the cookie
// plugin and its per-request hook are registered in those scopes alone, not on the hot license
// and publish endpoints.
describe("cookie parsing is scoped to the dashboard and the admin API", () => {
  let app: FastifyInstance;
  let cleanup: () => Promise<void>;
  const parsedCookies = new Map<string, unknown>();

  beforeAll(async () => {
    const { database, testDatabase } = await openTestDatabase("sqlite");
    app = await buildApp({ database });
    // Runs in every scope, after the route's own hooks: what the route saw as request.cookies.
    app.addHook("onResponse", async (request) => {
      parsedCookies.set(request.url, (request as { cookies?: unknown }).cookies);
    });
    cleanup = async () => {
      await app.close();
      await database.close();
      await testDatabase.drop();
    };
  });
  afterAll(async () => cleanup());

  const send = (method: "GET" | "POST", url: string) =>
    app.inject({
      method,
      url,
      headers: { cookie: "shipkey_session=abc; other=1" },
      ...(method === "POST" ? { payload: {} } : {}),
    });

  it.each([
    ["POST", "/api/license/validate"],
    ["POST", "/api/license/activate"],
    ["POST", "/api/license/deactivate"],
    ["POST", "/api/releases/publish"],
  ] as const)("%s %s does not parse cookies", async (method, url) => {
    const response = await send(method, url);
    expect(response.statusCode).toBeLessThan(500);
    expect(parsedCookies.has(url)).toBe(true);
    expect(parsedCookies.get(url)).toBeUndefined();
  });

  it.each([
    ["GET", "/admin/login"],
    ["GET", "/api/admin/products"],
  ] as const)("%s %s parses them", async (method, url) => {
    const response = await send(method, url);
    expect(response.statusCode).toBeLessThan(500);
    expect(parsedCookies.get(url)).toEqual({ shipkey_session: "abc", other: "1" });
  });
});
