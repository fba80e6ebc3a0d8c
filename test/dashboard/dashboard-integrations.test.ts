import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { adminAccess } from "../helpers/admin-access.js";
import { cookieAfter } from "../helpers/dashboard.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

describe.each(dialects)("dashboard integrations page (%s)", (dialect) => {
  let f: Fixture;
  let cookie: string;
  let csrf: string;
  beforeAll(async () => {
    f = await createFixture(dialect, { publicUrl: "https://licenses.example.com" });
    ({ cookie, csrf } = await adminAccess(f, "integrations-page@example.com"));
  });
  afterAll(async () => {
    await f.close();
  });
  beforeEach(async () => {
    await f.db.deleteFrom("integrations").execute();
  });

  const form = (url: string, fields: Record<string, string>) =>
    f.app.inject({
      method: "POST",
      url,
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ ...fields, _csrf: csrf }).toString(),
    });
  const page = (url: string, withCookie = cookie) =>
    f.app.inject({ method: "GET", url, headers: { cookie: withCookie } });

  it("is in the navigation and creates an integration whose secret no page shows", async () => {
    const empty = await page("/admin/integrations");
    expect(empty.statusCode).toBe(200);
    expect(empty.body).toContain('href="/admin/integrations"');
    expect(empty.body).toContain("No payment integrations yet.");
    expect(empty.body).toContain('type="password"');

    const secret = "whsec_dashboard_secret_value";
    const created = await form("/admin/integrations", {
      product: f.product.slug,
      provider: "paddle",
      mode: "test",
      description: "",
      secret,
    });
    expect(created.statusCode, created.body).toBe(303);
    const row = await f.db.selectFrom("integrations").selectAll().executeTakeFirstOrThrow();
    expect(row).toMatchObject({ provider: "paddle", mode: "test", description: null });
    const url = `https://licenses.example.com/api/integrations/paddle/${row.id}/webhook`;

    const next = await page("/admin/integrations", cookieAfter(cookie, created));
    expect(next.body).toContain(`Integration created: paste ${url}`);
    expect(next.body).toContain(`<code id="url-${row.id}">${url}</code`);
    expect(next.body).not.toContain(secret);
    const again = await page("/admin/integrations");
    expect(again.body).not.toContain(secret);
    expect(again.body).not.toContain("Integration created");

    const [entry] = await f.db
      .selectFrom("audit_log")
      .selectAll()
      .where("action", "=", "integration.create")
      .execute();
    expect(entry).toMatchObject({ target_type: "integration", target_id: row.id });
    expect(JSON.stringify(entry)).not.toContain(secret);
  });

  it("sends a refused form back with its errors, the product kept and the secret blank", async () => {
    const refused = await form("/admin/integrations", {
      product: "no-such-product",
      provider: "stripe",
      mode: "live",
      description: "",
      secret: "whsec_refused_secret",
    });
    expect(refused.statusCode).toBe(404);
    expect(refused.body).toContain('value="no-such-product"');
    expect(refused.body).not.toContain("whsec_refused_secret");
    const short = await form("/admin/integrations", {
      product: f.product.slug,
      provider: "stripe",
      mode: "live",
      description: "",
      secret: "abc",
    });
    expect(short.statusCode).toBe(400);
    expect(short.body).toContain('aria-invalid="true"');
    expect(await f.db.selectFrom("integrations").selectAll().execute()).toHaveLength(0);
  });

  it("refuses a form without the CSRF token", async () => {
    const response = await f.app.inject({
      method: "POST",
      url: "/admin/integrations",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ product: f.product.slug, provider: "stripe" }).toString(),
    });
    expect(response.statusCode).toBe(403);
    expect(await f.db.selectFrom("integrations").selectAll().execute()).toHaveLength(0);
  });
});
