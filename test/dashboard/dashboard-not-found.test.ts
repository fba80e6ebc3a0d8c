import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminAccess } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

/** The cookie pairs a response sets, as one Cookie header with `base`. */
function withSetCookies(base: string, setCookie: string | string[] | undefined): string {
  const all = Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : [];
  return [base, ...all.map((c) => c.split(";")[0])].join("; ");
}

describe.each(dialects)("dashboard not-found pages and refused actions (%s)", (dialect) => {
  let f: Fixture;
  let cookie: string;
  let csrf: string;
  const get = (url: string, headers: Record<string, string> = { cookie }) =>
    f.app.inject({ method: "GET", url, headers });
  const post = (url: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
    f.app.inject({
      method: "POST",
      url,
      headers: { cookie, "content-type": "application/x-www-form-urlencoded", ...headers },
      payload: new URLSearchParams({ _csrf: csrf, ...body }).toString(),
    });
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ cookie, csrf } = await adminAccess(f, "not-found@example.com"));
  });
  afterAll(async () => {
    await f?.close();
  });

  /** A 404 HTML page inside the signed-in layout, with a link back. */
  const expectNotFoundPage = (response: Awaited<ReturnType<typeof get>>, message?: string) => {
    expect(response.statusCode).toBe(404);
    expect(response.headers["content-type"]).toContain("text/html");
    expect(response.body).toContain("<h1>Page not found</h1>");
    expect(response.body).toContain('<nav aria-label="Sections">');
    expect(response.body).toContain("Sign out");
    expect(response.body).toContain('<a href="/admin">Back to the dashboard</a>');
    expect(response.body).not.toContain('aria-current="page"');
    if (message) expect(response.body).toContain(message);
  };

  it("answers an unknown path under /admin with a 404 page in the layout", async () => {
    for (const url of ["/admin/nope", "/admin/licenses/a/b/c", "/admin/products/desktop-app/x"]) {
      expectNotFoundPage(await get(url), "There is no such page in the dashboard.");
    }
    expectNotFoundPage(await post("/admin/nope", {}));
    expectNotFoundPage(await get("/admin/products/desktop-app/delete")); // a POST-only path
    expectNotFoundPage(await post("/admin", {})); // a GET-only path
    // A webhook endpoint's button that does not exist.
    expectNotFoundPage(await post("/admin/webhooks/whe_unknown/nope", {}));
    const slash = await get("/admin/");
    expect(slash.statusCode).toBe(302);
    expect(slash.headers.location).toBe("/admin");
  });

  it("tells a signed-out visitor nothing about which paths exist", async () => {
    for (const url of ["/admin/nope", "/admin/licenses/unknown-key", "/admin/licenses"]) {
      const response = await get(url, {});
      expect(response.statusCode).toBe(303);
      expect(response.headers.location).toBe("/admin/login");
    }
    // HEAD as GET: the sign-in page answers, any other page (known or not) sends to it.
    expect((await f.app.inject({ method: "HEAD", url: "/admin/login" })).statusCode).toBe(200);
    for (const url of ["/admin", "/admin/nope", "/admin/licenses"]) {
      const head = await f.app.inject({ method: "HEAD", url });
      expect([head.statusCode, head.headers.location], url).toEqual([303, "/admin/login"]);
    }
    const unknown = await f.app.inject({ method: "POST", url: "/admin/nope", payload: {} });
    const known = await f.app.inject({ method: "POST", url: "/admin/products", payload: {} });
    expect(unknown.statusCode).toBe(403);
    expect(unknown.body).toBe(known.body);
    // The dashboard's root too, with a method it does not take.
    for (const method of ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] as const) {
      const root = await f.app.inject({ method, url: "/admin", payload: {} });
      expect(root.statusCode, method).toBe(403);
      expect(root.body).toBe(known.body);
    }
    // The assets stay public, the JSON APIs keep their JSON 404.
    expect((await get("/admin/assets/app.js", {})).statusCode).toBe(200);
    const api = await get("/api/nope", {});
    expect(api.statusCode).toBe(404);
    expect(api.json()).toMatchObject({ code: "ROUTE_NOT_FOUND" });
  });

  it("answers an unknown license, product, release, machine, webhook or admin with a 404 page", async () => {
    expectNotFoundPage(await get("/admin/licenses/NO-SUCH-KEY-AT-ALL"), "No license has this key.");
    expectNotFoundPage(await get("/admin/products/no-such-product/keys"), "Product not found");
    expectNotFoundPage(await get("/admin/releases?product=no-such-product"), "Product not found");
    expectNotFoundPage(await get("/admin/webhooks/whe_unknown"), "Webhook endpoint whe_unknown");
    const base = "/admin/releases/desktop-app/9.9.9";
    const referer = "http://localhost/admin/releases?product=desktop-app";
    expectNotFoundPage(await post(`${base}/yank`, {}, { referer }), "No version 9.9.9");
    const key = await f.createLicense();
    const machine = `/admin/licenses/${key}/machines/no-such-machine/deactivate`;
    expectNotFoundPage(
      await post(machine, {}, { referer: `http://localhost/admin/licenses/${key}` }),
    );
    const admin = await post("/admin/admins/remove", { email: "nobody@example.com" });
    expect(admin.statusCode).toBe(404);
    expect(admin.body).toContain('<nav aria-label="Sections">');
  });

  it("a refusal sent back to a page that fails meanwhile is shown on the error page", async () => {
    const key = await f.createLicense();
    const machine = { licenseKey: key, machineId: "machine-1", productSlug: f.product.slug };
    expect((await f.post("/api/license/activate", machine)).statusCode).toBe(200);
    const page = `/admin/licenses/${key}`;
    const refused = await post(`${page}/delete`, {}, { referer: `http://localhost${page}` });
    expect(refused.statusCode).toBe(303);
    // The license goes before the browser follows the redirect.
    expect((await f.post("/api/license/deactivate", machine)).statusCode).toBe(200);
    expect((await post(`${page}/delete`, {})).statusCode).toBe(303);
    const gone = await get(page, { cookie: withSetCookies(cookie, refused.headers["set-cookie"]) });
    expectNotFoundPage(gone, "No license has this key.");
    expect(gone.body).toMatch(/<p class="alert notice" role="alert">[^<]*machine/);
  });

  it("shows a refused action's message on the page it came from, once", async () => {
    const key = await f.createLicense();
    const activated = await f.post("/api/license/activate", {
      licenseKey: key,
      machineId: "machine-1",
      productSlug: f.product.slug,
    });
    expect(activated.statusCode).toBe(200);
    const page = `/admin/licenses/${key}`;
    const refused = await post(`${page}/delete`, {}, { referer: `http://localhost${page}?tab=x` });
    expect(refused.statusCode).toBe(303);
    expect(refused.headers.location).toBe(`${page}?tab=x`);
    const shown = await get(page, {
      cookie: withSetCookies(cookie, refused.headers["set-cookie"]),
    });
    expect(shown.statusCode).toBe(200);
    expect(shown.body).toMatch(/<p class="alert notice" role="alert">[^<]*machine/);
    expect(shown.headers["set-cookie"]).toBeDefined(); // cleared
    expect((await get(page)).body).not.toContain("alert notice");
    // Without a Referer from the dashboard, the refusal is a page of its own.
    for (const headers of [{}, { referer: "https://evil.example/x" }] as Record<string, string>[]) {
      const bare = await post(`${page}/delete`, {}, headers);
      expect(bare.statusCode).toBe(409);
      expect(bare.body).toContain("Something is wrong");
      expect(bare.body).toContain('<nav aria-label="Sections">');
    }
    // Nor without the form's CSRF token.
    const forged = await f.app.inject({
      method: "POST",
      url: `${page}/delete`,
      headers: {
        cookie,
        referer: `http://localhost${page}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      payload: "_csrf=wrong&x=%00", // refused (400) before the token is checked
    });
    expect(forged.statusCode).toBe(400);
    expect(forged.body).toContain("NUL character");
    expect(forged.headers["set-cookie"]).toBeUndefined();
    // A not-found is its page, not a notice.
    const moved = await post(
      `${page}/move`,
      { productSlug: "no-such-product" },
      {
        referer: `http://localhost${page}`,
      },
    );
    expect(moved.statusCode).toBe(404);
  });

  it("a refusal sent from a page only a POST renders (a form's refusal) is a page of its own", async () => {
    const key = await f.createLicense();
    const activated = await f.post("/api/license/activate", {
      licenseKey: key,
      machineId: "machine-1",
      productSlug: f.product.slug,
    });
    expect(activated.statusCode).toBe(200);
    const page = `/admin/licenses/${key}`;
    // A refused edit shows the license's page at the form's address, which has no GET.
    const edit = await post(`${page}/edit`, { maxMachines: "two" });
    expect(edit.statusCode).toBe(400);
    expectNotFoundPage(await get(`${page}/edit`));
    // Going back there would lose the message behind a 404: the refusal is shown at once.
    const refused = await post(`${page}/delete`, {}, { referer: `http://localhost${page}/edit` });
    expect(refused.statusCode).toBe(409);
    expect(refused.body).toMatch(/<p>[^<]*machine/);
    expect(refused.body).toContain('<nav aria-label="Sections">');
    expect(refused.headers["set-cookie"]).toBeUndefined();
  });
});
