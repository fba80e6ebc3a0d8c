import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeCursor } from "../../src/domain/pagination.js";
import { dialects } from "../helpers/database.js";
import { adminAccess } from "../helpers/admin-access.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

describe.each(dialects)("dashboard and admin API hardening (%s)", (dialect) => {
  let f: Fixture;
  let admin: string;
  let cookie: string;
  let csrf: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ apiKey: admin, cookie, csrf } = await adminAccess(f, "sec@example.com"));
  });
  afterAll(async () => {
    await f.close();
  });

  it("the sign-in CSRF check cannot be bypassed with an encoded path", async () => {
    const response = await f.app.inject({
      method: "POST",
      url: "/admin/%6Cogin",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: "email=sec%40example.com&password=a+long+enough+password",
    });
    expect(response.statusCode).toBe(400);
    expect(response.headers["set-cookie"] ?? "").not.toContain("shipkey_session=");
  });

  it.each([
    ["/api/admin/licenses?q=%00", "q"],
    ["/api/admin/licenses?product=a%00", "product"],
    ["/api/admin/licenses/a%00", "licenseKey"],
    ["/api/admin/products/a%00", "slug"],
  ])("GET %s is a 400, never a 500", async (url, field) => {
    const response = await f.app.inject({
      method: "GET",
      url,
      headers: { authorization: `Bearer ${admin}` },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({
      error: "The request contains a NUL character",
      code: "INVALID_FIELD_VALUE",
      field,
    });
  });

  it("a NUL inside an admin JSON body is a 400", async () => {
    const response = await f.app.inject({
      method: "POST",
      url: "/api/admin/products",
      headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
      payload: JSON.stringify({ slug: "ok", name: "bad\u0000name" }),
    });
    expect(response.statusCode).toBe(400);
  });

  it.each([
    ["a fractional timestamp", encodeCursor(1.5, "lic_x")],
    ["a huge timestamp", Buffer.from(JSON.stringify([1e300, "lic_x"])).toString("base64url")],
    ["a NUL in the id", Buffer.from(JSON.stringify([1, "a\u0000"])).toString("base64url")],
  ])("a cursor with %s is a 400", async (_label, cursor) => {
    for (const path of ["/api/admin/licenses", "/api/admin/audit"]) {
      const response = await f.app.inject({
        method: "GET",
        url: `${path}?cursor=${cursor}`,
        headers: { authorization: `Bearer ${admin}` },
      });
      expect(response.statusCode).toBe(400);
      expect(response.json().error).toBe("cursor is not valid");
    }
  });

  it("dashboard pages and sign-in refuse NUL input with a 400 page", async () => {
    const page = await f.app.inject({
      method: "GET",
      url: "/admin/licenses?q=%00",
      headers: { cookie },
    });
    expect(page.statusCode).toBe(400);
    expect(page.headers["content-type"]).toMatch(/text\/html/);
    const login = await f.app.inject({
      method: "POST",
      url: "/admin/login",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: "email=a%00&password=x",
    });
    expect(login.statusCode).toBe(400);
  });

  it("a dashboard form sent as JSON with non-string values is re-rendered with an error, not a 500", async () => {
    const response = await f.app.inject({
      method: "POST",
      url: "/admin/products",
      headers: { cookie, "content-type": "application/json" },
      payload: JSON.stringify({ _csrf: csrf, slug: 5, name: "x" }),
    });
    expect(response.statusCode).toBe(400);
    expect(response.body).toContain("slug must be lowercase letters");
  });
});
