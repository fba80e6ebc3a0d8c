import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

/**
 * PostgreSQL cannot store or compare U+0000: a NUL that reached a query was a 500. Every route of
 * the OpenAPI document (generated from the app) gets one in each path parameter and in the
 * query, on both databases, and answers a 4xx JSON error.
 */
describe.each(dialects)("a NUL in any URL (%s)", (dialect) => {
  let f: Fixture;
  let operations: Array<{ method: string; path: string }>;
  beforeAll(async () => {
    f = await createFixture(dialect);
    const doc = (await f.app.inject({ url: "/openapi.json" })).json<{
      paths: Record<string, Record<string, unknown>>;
    }>();
    operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => ({ method: method.toUpperCase(), path })),
    );
  });
  afterAll(async () => {
    await f.close();
  });

  it("in a path parameter or the query: 4xx (JSON on /api/), never a 5xx", async () => {
    expect(operations.length).toBeGreaterThan(40);
    const failures: string[] = [];
    for (const { method, path } of operations) {
      const withNul = path.replace(/\{[^}]+\}/g, "a%00b");
      const urls = [withNul, `${path.replace(/\{[^}]+\}/g, "desktop-app")}?platform=x%00y`];
      for (const url of urls) {
        const response = await f.app.inject({
          method: method as "GET",
          url,
          ...(method === "GET" || method === "DELETE"
            ? {}
            : { headers: { "content-type": "application/json" }, payload: "{}" }),
        });
        const json = String(response.headers["content-type"]).includes("json");
        if (response.statusCode >= 500 || (url.startsWith("/api/") && !json)) {
          failures.push(`${method} ${url}: ${response.statusCode} ${response.body.slice(0, 120)}`);
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it("the public routes name the parameter in a 400", async () => {
    for (const url of [
      "/api/products/a%00b/keys",
      "/api/updates/a%00b/latest?platform=WINDOWS&arch=X64",
      "/api/downloads/a%00b/1.0.0/WINDOWS/X64",
      "/api/updates/desktop-app/latest?platform=WIN%00DOWS&arch=X64",
    ]) {
      const response = await f.app.inject({ url });
      expect(response.statusCode, url).toBe(400);
      expect(response.json<{ code: string; error: string }>()).toMatchObject({
        code: "INVALID_FIELD_VALUE",
        error: expect.stringMatching(/must not contain NUL characters$/),
      });
    }
  });

  it("a license key with a NUL, on a feed, is an unknown key", async () => {
    const response = await f.app.inject({
      url: "/api/updates/desktop-app/latest?platform=WINDOWS&arch=X64&licenseKey=K%00&machineId=m",
    });
    expect(response.statusCode).toBe(403);
    expect(response.json()).toMatchObject({
      error: "Invalid license key",
      code: "UPDATES_LICENSE_NOT_FOUND",
    });
  });
});
