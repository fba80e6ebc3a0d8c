import { afterEach, describe, expect, it } from "vitest";
import { adminAccess } from "../helpers/admin-access.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

let f: Fixture;
afterEach(async () => f.close());

describe("security headers", () => {
  it("admin API answers are no-store and nosniff: the new API key's secret, lists and errors", async () => {
    f = await createFixture("sqlite");
    const { apiKey } = await adminAccess(f, "admin@example.com");
    const created = await f.post(
      "/api/admin/api-keys",
      { name: "ci", scopes: ["releases:write"] },
      { authorization: `Bearer ${apiKey}` },
    );
    expect(created.statusCode).toBe(201);
    expect(created.json()).toHaveProperty("key");
    const list = await f.app.inject({
      method: "GET",
      url: "/api/admin/licenses",
      headers: { authorization: `Bearer ${apiKey}` },
    });
    const refused = await f.app.inject({ method: "GET", url: "/api/admin/licenses" });
    expect(refused.statusCode).toBe(401);
    for (const response of [created, list, refused]) {
      expect(response.headers["cache-control"]).toBe("no-store");
      expect(response.headers["x-content-type-options"]).toBe("nosniff");
    }
  });

  it("the server's address leads to the dashboard", async () => {
    f = await createFixture("sqlite");
    const response = await f.app.inject({ method: "GET", url: "/" });
    expect(response.statusCode).toBe(302);
    expect(response.headers.location).toBe("/admin");
  });

  it("/docs: a content security policy that forbids framing", async () => {
    f = await createFixture("sqlite");
    for (const url of ["/docs", "/docs/static/index.html"]) {
      const response = await f.app.inject({ method: "GET", url });
      const policy = String(response.headers["content-security-policy"]);
      expect(policy).toContain("frame-ancestors 'none'");
      expect(policy).toContain("script-src 'self'");
      expect(policy).not.toContain("unsafe-eval");
    }
  });
});
