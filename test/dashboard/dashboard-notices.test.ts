import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpStatusByCode } from "../../src/errors.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { cookieAfter, noticeOf } from "../helpers/dashboard.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

/**
 * The dashboard's one notice (a sealed cookie per page, src/http/dashboard/notice.ts) and its
 * failures, answered by the error handler it shares with the API (error-handler.ts) with the
 * status of their code.
 */
describe.each(dialects)("dashboard notices and failures (%s)", (dialect) => {
  let f: Fixture;
  let cookie: string;
  let csrf: string;
  let apiKey: string;
  const get = (url: string, cookies = cookie) =>
    f.app.inject({ method: "GET", url, headers: { cookie: cookies } });
  const post = (
    url: string,
    fields: Record<string, string>,
    headers: Record<string, string> = {},
  ) =>
    f.app.inject({
      method: "POST",
      url,
      headers: { cookie, "content-type": "application/x-www-form-urlencoded", ...headers },
      payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString(),
    });
  const flashOf = (page: string) =>
    /<p class="flash" role="status">\s*([^<]*?)\s*<\/p>/.exec(page)?.[1];
  const alertOf = (page: string) =>
    /<p class="alert notice" role="alert">\s*([^<]*?)\s*<\/p>/.exec(page)?.[1];

  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ cookie, csrf, apiKey } = await adminAccess(f, "notices@example.com"));
  });
  afterAll(async () => {
    await f?.close();
  });

  it("says what a POST did once, on the page it leads to, from a sealed cookie and never the address", async () => {
    const renamed = await post(`/admin/products/${f.product.slug}/rename`, { name: "Renamed" });
    expect(renamed.statusCode).toBe(303);
    expect(renamed.headers.location).toBe("/admin/products");
    const set = String(renamed.headers["set-cookie"]);
    expect(set).toMatch(/^shipkey_notice=[^;]+; Max-Age=60; Path=\/admin\/products; HttpOnly/);
    expect(set).toMatch(/SameSite=Strict/);
    expect(Buffer.from(noticeOf(renamed), "base64url").toString("latin1")).not.toContain("renamed");

    const shown = await get("/admin/products", cookieAfter(cookie, renamed));
    expect(flashOf(shown.body)).toBe("Product renamed.");
    expect(String(shown.headers["set-cookie"])).toMatch(
      /shipkey_notice=;.*Expires=Thu, 01 Jan 1970/,
    );
    // A reload, or a message written into the address, shows nothing.
    expect(flashOf((await get("/admin/products")).body)).toBeUndefined();
    expect(flashOf((await get("/admin/products?done=renamed")).body)).toBeUndefined();
  });

  it("opens a notice only on its own page and in its own session, untampered", async () => {
    const renamed = await post(`/admin/products/${f.product.slug}/rename`, { name: "Again" });
    const notice = `shipkey_notice=${noticeOf(renamed)}`;
    // The admins page gets the cookie only from a browser that ignores its Path: it stays shut.
    expect(flashOf((await get("/admin/admins", `${cookie}; ${notice}`)).body)).toBeUndefined();
    const other = await adminAccess(f, "other-notices@example.com");
    const stolen = await get("/admin/products", `${other.cookie}; ${notice}`);
    expect(stolen.statusCode).toBe(200);
    expect(flashOf(stolen.body)).toBeUndefined();
    const tampered = `shipkey_notice=${noticeOf(renamed).slice(0, -2)}AA`;
    expect(flashOf((await get("/admin/products", `${cookie}; ${tampered}`)).body)).toBeUndefined();
  });

  it("shows a refused action on its form's page as an alert, in place of what was done", async () => {
    const key = await f.createLicense();
    const machine = { licenseKey: key, machineId: "m-1", productSlug: f.product.slug };
    expect((await f.post("/api/license/activate", machine)).statusCode).toBe(200);
    const page = `/admin/licenses/${key}`;
    const updated = await post(`${page}/status`, { status: "SUSPENDED" });
    expect(flashOf((await get(page, cookieAfter(cookie, updated))).body)).toBe(
      "License suspended.",
    );
    const refused = await post(`${page}/delete`, {}, { referer: `http://localhost${page}` });
    expect(refused.statusCode).toBe(303);
    expect(refused.headers.location).toBe(page);
    const shown = await get(page, cookieAfter(cookie, refused));
    expect(alertOf(shown.body)).toMatch(/machine/);
    expect(flashOf(shown.body)).toBeUndefined();
  });

  it("answers a refused form with its code's status, as the admin API does", async () => {
    const taken = await post("/admin/products", { slug: f.product.slug, name: "Twin" });
    const api = await callWithApiKey(f, apiKey, "POST", "/api/admin/products", {
      slug: f.product.slug,
      name: "Twin",
    });
    expect(api.json()).toMatchObject({ code: "PRODUCT_SLUG_TAKEN" });
    expect(taken.statusCode).toBe(api.statusCode);
    expect(taken.statusCode).toBe(httpStatusByCode.PRODUCT_SLUG_TAKEN);
    expect(taken.body).toContain('value="Twin"');

    const unknown = await post("/admin/products/no-such-product/rename", { name: "X" });
    expect(unknown.statusCode).toBe(httpStatusByCode.PRODUCT_NOT_FOUND);
    expect(unknown.body).toMatch(/<p class="alert" role="alert">\s*Product not found/);

    // The contract's range, said as the domain says it.
    const keys = `/admin/products/${f.product.slug}/keys`;
    const tooMany = await post(`${keys}/offline-allowance`, { offlineAllowance: "200" });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.body).toContain("offlineAllowance must be a whole number from 0 to 100");
  });

  it("answers what the framework refuses with the shared handler's code and status, as a page", async () => {
    const huge = await post("/admin/products", { slug: "big", name: "x".repeat(70 * 1024) });
    expect(huge.statusCode).toBe(httpStatusByCode.PAYLOAD_TOO_LARGE);
    expect(huge.headers["content-type"]).toContain("text/html");
    expect(huge.headers.connection).toBe("close");
    expect(huge.body).toContain("The request could not be understood.");
    expect(huge.body).toContain('<nav aria-label="Sections">');

    const broken = await f.app.inject({
      method: "POST",
      url: "/admin/products",
      headers: { cookie, "content-type": "application/json" },
      payload: "{not json",
    });
    expect(broken.statusCode).toBe(httpStatusByCode.INVALID_JSON);
    expect(broken.headers["content-type"]).toContain("text/html");
    expect(broken.body).toContain("The request could not be understood.");
  });

  it.runIf(dialect === "sqlite")(
    "answers a database that cannot write with 503, Retry-After and a page",
    async () => {
      await sql`PRAGMA query_only = ON`.execute(f.db);
      try {
        const refused = await post(`/admin/products/${f.product.slug}/rename`, { name: "Y" });
        expect(refused.statusCode).toBe(httpStatusByCode.DATABASE_UNAVAILABLE);
        expect(refused.headers["retry-after"]).toBe("5");
        expect(refused.body).toContain("The database is unavailable. Try again in a few seconds.");
      } finally {
        await sql`PRAGMA query_only = OFF`.execute(f.db);
      }
    },
  );

  it("answers an unexpected failure with 500, saying nothing of it", async () => {
    await sql`DROP TABLE webhook_deliveries`.execute(f.db);
    await sql`DROP TABLE webhook_endpoints`.execute(f.db);
    const failed = await get("/admin/webhooks");
    expect(failed.statusCode).toBe(httpStatusByCode.INTERNAL_ERROR);
    expect(failed.body).toContain("Something went wrong on our side.");
    expect(failed.body).not.toMatch(/webhook_endpoints|no such table|does not exist/);
  });
});
