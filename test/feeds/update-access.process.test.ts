import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listAudit } from "../../src/domain/audit/audit-log.js";
import { createProduct, requireProduct } from "../../src/domain/products/products.js";
import { adminAccess } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { runCli } from "../helpers/cli.js";

/**
 * Licensed updates (a product setting), the counted download redirect and the usage counts, on
 * both databases.
 */
describe.each(dialects)("licensed updates and downloads (%s)", (dialect) => {
  let f: Fixture;
  let apiKey: string;
  let cookie: string;
  let csrf: string;
  let products = 0;
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ apiKey, cookie, csrf } = await adminAccess(f, `admin-${dialect}@example.com`));
  });
  afterAll(async () => {
    await f.close();
  });

  const admin = (method: "PATCH" | "POST" | "GET", url: string, body?: unknown) =>
    f.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });

  const get = (url: string, headers: Record<string, string> = {}) =>
    f.app.inject({ method: "GET", url, headers });

  const entry = (platform: string, arch: string) => ({
    platform,
    arch,
    downloadUrl: `https://cdn.example.com/app/${platform}-${arch}/Setup%20App.zip`,
    signature: `sig-${platform}-${arch}`,
    sha512: Buffer.alloc(64, 7).toString("base64"),
    fileSize: 10,
  });

  const publish = async (productSlug: string, version: string) => {
    const releases = ["WINDOWS", "MACOS", "LINUX"].flatMap((p) =>
      ["X64", "ARM64"].map((a) => entry(p, a)),
    );
    const response = await f.post(
      "/api/releases/publish",
      { productSlug, version, channel: "STABLE", releaseNotes: null, releases },
      { authorization: `Bearer ${f.publishKey}` },
    );
    expect(response.statusCode, response.body).toBe(200);
  };

  /** A product of its own, with releases and the given delivery settings. */
  const newProduct = async (
    settings: { updatesRequireLicense?: boolean; downloadRedirects?: boolean },
    versions = ["1.0.0", "1.1.0"],
  ) => {
    products += 1;
    const { slug } = await createProduct(f.db, { slug: `gated-${products}`, name: "Gated" });
    for (const version of versions) await publish(slug, version);
    if (Object.keys(settings).length > 0) {
      const response = await admin("PATCH", `/api/admin/products/${slug}`, settings);
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toMatchObject(settings);
    }
    return slug;
  };

  /** A license of the product with one activated machine. */
  const activated = async (productSlug: string, machineId = "machine-1") => {
    const licenseKey = await f.createLicense({ productSlug });
    const response = await f.post("/api/license/activate", {
      licenseKey,
      machineId,
      productSlug,
    });
    expect(response.statusCode, response.body).toBe(200);
    return { licenseKey, machineId };
  };

  const licensed = (c: { licenseKey: string; machineId: string }) => ({
    authorization: `License ${c.licenseKey}`,
    "shipkey-machine": c.machineId,
  });

  /** Every feed and the download, as a client on 1.0.0 for Windows x64 would ask. */
  const endpoints = (slug: string) => ({
    tauri: `/api/updates/${slug}/tauri/windows/x86_64/1.0.0`,
    squirrel: `/api/updates/${slug}/squirrel-mac/x64/1.0.0`,
    electron: `/api/updates/${slug}/electron/latest.yml`,
    sparkle: `/api/updates/${slug}/sparkle/windows/x64/appcast.xml`,
    latest: `/api/updates/${slug}/latest?platform=WINDOWS&arch=X64&currentVersion=1.0.0`,
    download: `/api/downloads/${slug}/1.1.0/WINDOWS/X64`,
  });

  const expectRefused = (response: LightMyRequestResponse, status: number, code: string) => {
    expect(response.statusCode, response.body).toBe(status);
    expect(response.headers["content-type"]).toMatch(/application\/json/);
    expect(response.json()).toMatchObject({ code });
  };

  describe("a product that requires a license for updates", () => {
    it("answers an activated machine on every feed and the download (headers)", async () => {
      const slug = await newProduct({ updatesRequireLicense: true });
      const credentials = await activated(slug);
      for (const [name, url] of Object.entries(endpoints(slug))) {
        const response = await get(url, licensed(credentials));
        expect(response.statusCode, `${name}: ${response.body}`).toBe(
          name === "download" ? 302 : 200,
        );
      }
    });

    it("takes the credentials as query parameters too (Sparkle cannot always set headers)", async () => {
      const slug = await newProduct({ updatesRequireLicense: true });
      const credentials = await activated(slug);
      const query = new URLSearchParams(credentials).toString();
      const appcast = await get(`${endpoints(slug).sparkle}?${query}`);
      expect(appcast.statusCode, appcast.body).toBe(200);
      const download = await get(`${endpoints(slug).download}?${query}`);
      expect(download.statusCode).toBe(302);
    });

    const refusals: Array<{
      name: string;
      status: number;
      code: string;
      headers: (slug: string) => Promise<Record<string, string>>;
    }> = [
      {
        name: "no credentials",
        status: 401,
        code: "UPDATES_LICENSE_REQUIRED",
        headers: async () => ({}),
      },
      {
        name: "a license key without a machine",
        status: 401,
        code: "UPDATES_LICENSE_REQUIRED",
        headers: async (slug) => ({
          authorization: `License ${(await activated(slug)).licenseKey}`,
        }),
      },
      {
        name: "an unknown license key",
        status: 403,
        code: "UPDATES_LICENSE_NOT_FOUND",
        headers: async () => licensed({ licenseKey: "no-such-key-0000000", machineId: "m" }),
      },
      {
        name: "a license of another product",
        status: 403,
        code: "UPDATES_LICENSE_REFUSED",
        headers: async () => licensed(await activated(f.product.slug)),
      },
      {
        name: "a machine not activated on the license",
        status: 403,
        code: "UPDATES_LICENSE_REFUSED",
        headers: async (slug) =>
          licensed({ licenseKey: (await activated(slug)).licenseKey, machineId: "other" }),
      },
      {
        name: "a deactivated machine",
        status: 403,
        code: "UPDATES_LICENSE_REFUSED",
        headers: async (slug) => {
          const credentials = await activated(slug);
          const response = await f.post("/api/license/deactivate", {
            ...credentials,
            productSlug: slug,
          });
          expect(response.statusCode).toBe(200);
          return licensed(credentials);
        },
      },
      ...(["SUSPENDED", "REVOKED"] as const).map((status) => ({
        name: `a ${status.toLowerCase()} license`,
        status: 403,
        code: "UPDATES_LICENSE_REFUSED",
        headers: async (slug: string) => {
          const credentials = await activated(slug);
          await f.db
            .updateTable("licenses")
            .set({ status })
            .where("license_key", "=", credentials.licenseKey)
            .execute();
          return licensed(credentials);
        },
      })),
    ];

    it.each(refusals)(
      "refuses $name with $status $code on every feed and the download",
      async (c) => {
        const slug = await newProduct({ updatesRequireLicense: true });
        const headers = await c.headers(slug);
        for (const url of Object.values(endpoints(slug))) {
          expectRefused(await get(url, headers), c.status, c.code);
        }
      },
    );

    it("perpetual fallback: an expired license gets what was published up to its expiry", async () => {
      const slug = await newProduct({ updatesRequireLicense: true }, ["1.0.0", "1.1.0", "1.2.0"]);
      const credentials = await activated(slug);
      const expiry = Date.now() - 60_000;
      await f.db
        .updateTable("licenses")
        .set({ expires_at: expiry })
        .where("license_key", "=", credentials.licenseKey)
        .execute();
      const productId = (await requireProduct(f.db, slug)).id;
      const publishedAt: Record<string, number> = {
        "1.0.0": expiry - 2000,
        "1.1.0": expiry, // at the expiry itself: still covered
        "1.2.0": expiry + 1,
      };
      for (const [version, at] of Object.entries(publishedAt)) {
        await f.db
          .updateTable("release_versions")
          .set({ created_at: at })
          .where("product_id", "=", productId)
          .where("version", "=", version)
          .execute();
      }
      const headers = licensed(credentials);
      const table: Array<[string, number, string | null]> = [
        [`/api/updates/${slug}/tauri/linux/x86_64/1.0.0`, 200, "1.1.0"],
        [`/api/updates/${slug}/tauri/linux/x86_64/1.1.0`, 204, null],
        [`/api/updates/${slug}/latest?platform=LINUX&arch=ARM64`, 200, "1.1.0"],
        [`/api/downloads/${slug}/1.1.0/LINUX/X64`, 302, null],
        [`/api/downloads/${slug}/1.2.0/LINUX/X64`, 403, null],
      ];
      for (const [url, status, version] of table) {
        const response = await get(url, headers);
        expect(response.statusCode, `${url}: ${response.body}`).toBe(status);
        if (version) expect(response.json().version).toBe(version);
      }
      const yml = await get(`/api/updates/${slug}/electron/latest-linux.yml`, headers);
      expect(yml.body).toMatch(/^version: 1\.1\.0$/m);
      // A renewed license gets everything again.
      await f.db
        .updateTable("licenses")
        .set({ expires_at: null })
        .where("license_key", "=", credentials.licenseKey)
        .execute();
      const renewed = await get(`/api/updates/${slug}/tauri/linux/x86_64/1.0.0`, headers);
      expect(renewed.json().version).toBe("1.2.0");
    });

    it("an operator's plain SQL turning the setting off opens the feeds at the next request", async () => {
      const slug = await newProduct({ updatesRequireLicense: true });
      expect((await get(endpoints(slug).tauri)).statusCode).toBe(401);
      await f.db
        .updateTable("products")
        .set({ updates_require_license: 0 })
        .where("slug", "=", slug)
        .execute();
      expect((await get(endpoints(slug).tauri)).statusCode).toBe(200);
    });
  });

  describe("a public product", () => {
    it("ignores credentials, even wrong or incomplete ones", async () => {
      const slug = await newProduct({});
      const headers = licensed({ licenseKey: "whatever-key-0000000", machineId: "m" });
      for (const url of Object.values(endpoints(slug))) {
        expect((await get(url, headers)).statusCode).toBeLessThan(400);
        const keyOnly = { authorization: headers.authorization };
        expect((await get(url, keyOnly)).statusCode, url).toBeLessThan(400);
      }
    });
  });

  describe("the download redirect", () => {
    it("302 to the stored URL, with or without the file-name segment, platform and arch in any case", async () => {
      const slug = await newProduct({});
      for (const url of [
        `/api/downloads/${slug}/1.1.0/MACOS/ARM64`,
        `/api/downloads/${slug}/1.1.0/macos/arm64/Setup%20App.zip`,
        `/api/downloads/${slug}/v1.1.0/MACOS/ARM64`,
      ]) {
        const response = await get(url);
        expect(response.statusCode, url).toBe(302);
        expect(response.headers.location).toBe(
          "https://cdn.example.com/app/MACOS-ARM64/Setup%20App.zip",
        );
      }
    });

    it("refuses bad input with 4xx JSON and a yanked version with 404", async () => {
      const slug = await newProduct({});
      const cases: Array<[string, number]> = [
        [`/api/downloads/${slug}/1.1/MACOS/ARM64`, 400],
        [`/api/downloads/${slug}/1.1.0/BEOS/ARM64`, 400],
        [`/api/downloads/${slug}/1.1.0/MACOS/MIPS`, 400],
        [`/api/downloads/${slug}/9.9.9/MACOS/ARM64`, 404],
        [`/api/downloads/no-such-product/1.1.0/MACOS/ARM64`, 404],
      ];
      for (const [url, status] of cases) expectRefused(await get(url), status, expect.any(String));
      const yank = await admin("POST", `/api/admin/products/${slug}/releases/1.1.0/yank`, {});
      expect(yank.statusCode, yank.body).toBe(200);
      expectRefused(
        await get(`/api/downloads/${slug}/1.1.0/MACOS/ARM64`),
        404,
        "RELEASE_NOT_FOUND",
      );
    });

    it("counts GET downloads per version, platform and day, buffered; HEAD is not counted", async () => {
      const slug = await newProduct({});
      for (let i = 0; i < 3; i++) await get(`/api/downloads/${slug}/1.1.0/MACOS/ARM64`);
      await get(`/api/downloads/${slug}/1.1.0/MACOS/X64`);
      await get(`/api/downloads/${slug}/1.0.0/LINUX/X64`);
      await f.app.inject({ method: "HEAD", url: `/api/downloads/${slug}/1.0.0/LINUX/X64` });
      await f.app.usageCounts.flush(f.db);
      await get(`/api/downloads/${slug}/1.1.0/MACOS/ARM64`);
      await f.app.usageCounts.flush(f.db);
      const rows = await f.db
        .selectFrom("download_counts as d")
        .innerJoin("release_versions as v", "v.id", "d.version_id")
        .innerJoin("products as p", "p.id", "v.product_id")
        .select(["v.version", "d.platform", "d.day", "d.count"])
        .where("p.slug", "=", slug)
        .orderBy("v.version")
        .orderBy("d.platform")
        .execute();
      const today = new Date().toISOString().slice(0, 10);
      expect(rows.map((r) => [r.version, r.platform, r.day, Number(r.count)])).toEqual([
        ["1.0.0", "LINUX", today, 1],
        ["1.1.0", "MACOS", today, 5],
      ]);
    });
  });

  describe("update-check counts", () => {
    it("per product, current version, platform, channel and day; unpublished versions count as unknown", async () => {
      const slug = await newProduct({});
      const asks = [
        `/api/updates/${slug}/tauri/windows/x86_64/1.0.0`,
        `/api/updates/${slug}/tauri/windows/x86_64/v1.0.0?channel=BETA`,
        `/api/updates/${slug}/squirrel-mac/arm64/1.1.0`,
        `/api/updates/${slug}/latest?platform=LINUX&arch=X64&currentVersion=1.0.0`,
        `/api/updates/${slug}/tauri/linux/x86_64/0.0.1-dev`,
        `/api/updates/${slug}/electron/beta-linux.yml`,
      ];
      for (const url of asks) expect((await get(url)).statusCode, url).toBeLessThan(400);
      const sparkle = await get(`/api/updates/${slug}/sparkle/macos/x64/appcast.xml`, {
        "user-agent": "Gated/1.1.0 Sparkle/2.6.4",
      });
      expect(sparkle.statusCode).toBe(200);
      await f.app.usageCounts.flush(f.db);
      const rows = await f.db
        .selectFrom("update_checks as c")
        .innerJoin("products as p", "p.id", "c.product_id")
        .select(["c.current_version", "c.platform", "c.channel", "c.count"])
        .where("p.slug", "=", slug)
        .execute();
      const seen = rows
        .map((r) => `${r.current_version || "?"} ${r.platform} ${r.channel} ${Number(r.count)}`)
        .sort();
      expect(seen).toEqual([
        "1.0.0 LINUX STABLE 1",
        "1.0.0 WINDOWS BETA 1",
        "1.0.0 WINDOWS STABLE 1",
        "1.1.0 MACOS STABLE 2",
        "? LINUX BETA 1",
        "? LINUX STABLE 1",
      ]);
    });
  });

  describe("the usage report (admin API)", () => {
    it("sums downloads per version and platform and checks per client version over the window", async () => {
      const slug = await newProduct({}, ["1.0.0", "1.1.0", "1.10.0"]);
      const productId = (await requireProduct(f.db, slug)).id;
      for (const version of ["1.10.0", "1.1.0", "1.1.0"]) {
        await get(`/api/downloads/${slug}/${version}/WINDOWS/X64`);
      }
      await get(`/api/updates/${slug}/tauri/windows/x86_64/1.0.0`);
      await get(`/api/updates/${slug}/tauri/windows/x86_64/1.0.0`);
      await get(`/api/updates/${slug}/electron/latest.yml`);
      await f.app.usageCounts.flush(f.db);
      // A count from 40 days ago falls outside the default window and inside a 60-day one.
      const old = new Date(Date.now() - 40 * 86_400_000).toISOString().slice(0, 10);
      await f.db
        .insertInto("update_checks")
        .values({
          product_id: productId,
          day: old,
          current_version: "1.0.0",
          platform: "MACOS",
          channel: "STABLE",
          count: 9,
        })
        .execute();
      const report = await admin("GET", `/api/admin/products/${slug}/usage`);
      expect(report.statusCode, report.body).toBe(200);
      expect(report.json()).toMatchObject({
        product: slug,
        downloads: [
          { version: "1.10.0", platform: "WINDOWS", count: 1 },
          { version: "1.1.0", platform: "WINDOWS", count: 2 },
        ],
        updateChecks: [
          { currentVersion: "1.0.0", platform: "WINDOWS", channel: "STABLE", count: 2 },
          { currentVersion: null, platform: "WINDOWS", channel: "STABLE", count: 1 },
        ],
      });
      const wider = await admin("GET", `/api/admin/products/${slug}/usage?days=60`);
      expect(wider.json().updateChecks[0]).toMatchObject({ platform: "MACOS", count: 9 });
      for (const days of ["0", "367", "x", "1.5"]) {
        const response = await admin("GET", `/api/admin/products/${slug}/usage?days=${days}`);
        expect(response.statusCode, days).toBe(400);
      }
      expect((await admin("GET", "/api/admin/products/nope/usage")).statusCode).toBe(404);
    });
  });

  describe("feeds handing out the download redirect", () => {
    it("every feed's URL is the redirect, named after the stored file, and it resolves", async () => {
      const slug = await newProduct({ downloadRedirects: true });
      const base = `http://localhost:80/api/downloads/${slug}/1.1.0`;
      const tauri = await get(`/api/updates/${slug}/tauri/darwin/aarch64/1.0.0`);
      expect(tauri.json().url).toBe(`${base}/MACOS/ARM64/Setup%20App.zip`);
      const squirrel = await get(`/api/updates/${slug}/squirrel-mac/x64/1.0.0`);
      expect(squirrel.json().url).toBe(`${base}/MACOS/X64/Setup%20App.zip`);
      const latest = await get(`/api/updates/${slug}/latest?platform=LINUX&arch=X64`);
      expect(latest.json().url).toBe(`${base}/LINUX/X64/Setup%20App.zip`);
      const yml = await get(`/api/updates/${slug}/electron/latest.yml`);
      expect(yml.body).toContain(`url: ${base}/WINDOWS/X64/Setup%20App.zip`);
      const appcast = await get(`/api/updates/${slug}/sparkle/macos/arm64/appcast.xml`);
      expect(appcast.body).toContain(`url="${base}/MACOS/ARM64/Setup%20App.zip"`);
      const followed = await get(new URL(tauri.json().url).pathname);
      expect(followed.statusCode).toBe(302);
      expect(followed.headers.location).toBe(
        "https://cdn.example.com/app/MACOS-ARM64/Setup%20App.zip",
      );
    });

    it("query credentials are carried on to the redirect; header ones are not", async () => {
      const slug = await newProduct({ updatesRequireLicense: true, downloadRedirects: true });
      const credentials = await activated(slug);
      const query = new URLSearchParams(credentials).toString();
      const appcast = await get(`/api/updates/${slug}/sparkle/macos/arm64/appcast.xml?${query}`);
      const url = /url="([^"]+)"/.exec(appcast.body)?.[1]?.replaceAll("&amp;", "&");
      expect(url).toBe(
        `http://localhost:80/api/downloads/${slug}/1.1.0/MACOS/ARM64/Setup%20App.zip?${query}`,
      );
      const viaHeaders = await get(
        `/api/updates/${slug}/tauri/darwin/aarch64/1.0.0`,
        licensed(credentials),
      );
      expect(viaHeaders.json().url).not.toContain("licenseKey");
    });
  });

  describe("the dashboard's releases page", () => {
    const page = async (slug: string) =>
      (await get(`/admin/releases?product=${slug}`, { cookie })).body;

    it("shows downloads per version and platform and the versions in use", async () => {
      const slug = await newProduct({});
      await get(`/api/downloads/${slug}/1.1.0/LINUX/X64`);
      await get(`/api/downloads/${slug}/1.1.0/LINUX/ARM64`);
      await get(`/api/downloads/${slug}/1.1.0/MACOS/X64`);
      await get(`/api/updates/${slug}/tauri/linux/x86_64/1.0.0`);
      await f.app.usageCounts.flush(f.db);
      const html = await page(slug);
      const panel = (version: string) =>
        html.split(`data-version="${version}"`)[1]?.split("</section>")[0] ?? "";
      expect(panel("1.1.0")).toContain("3 downloads in 30 days");
      expect(panel("1.1.0")).toMatch(/<th scope="row">LINUX<\/th>[\s\S]*?<td>2<\/td>/);
      expect(panel("1.0.0")).toContain("0 downloads in 30 days");
      const inUse = html.split('id="versions-in-use"')[1]?.split("</section>")[0] ?? "";
      expect(inUse).toMatch(/<td>1\.0\.0<\/td>\s*<td>LINUX<\/td>\s*<td>STABLE<\/td>\s*<td>1<\/td>/);
    });

    it("sets update delivery from its form (CSRF-checked, audited)", async () => {
      const slug = await newProduct({});
      const post = (fields: Record<string, string>, token = csrf) =>
        f.app.inject({
          method: "POST",
          url: `/admin/releases/${slug}/delivery`,
          headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
          payload: new URLSearchParams({ _csrf: token, ...fields }).toString(),
        });
      expect((await post({ updatesRequireLicense: "on" }, "wrong")).statusCode).toBe(403);
      const saved = await post({ updatesRequireLicense: "on", downloadRedirects: "on" });
      expect(saved.statusCode).toBe(303);
      expect((await get(endpoints(slug).tauri)).statusCode).toBe(401);
      const licensedPage = await page(slug);
      expect(licensedPage).toMatch(/name="updatesRequireLicense" checked/);
      // Each client configuration says how its updater sends the license.
      expect(licensedPage.match(/class="hint license"/g)).toHaveLength(5);
      expect(licensedPage).toContain("autoUpdater.requestHeaders");
      await post({});
      expect((await get(endpoints(slug).tauri)).statusCode).toBe(200);
    });
  });

  describe("the setting", () => {
    it("PATCH validates its fields and is audited", async () => {
      const slug = await newProduct({});
      for (const body of [
        {},
        { updatesRequireLicense: "yes" },
        { downloadRedirects: 1 },
        { x: 1 },
      ]) {
        const response = await admin("PATCH", `/api/admin/products/${slug}`, body);
        expect(response.statusCode, JSON.stringify(body)).toBe(400);
      }
      const response = await admin("PATCH", `/api/admin/products/${slug}`, {
        updatesRequireLicense: true,
      });
      expect(response.json()).toMatchObject({
        updatesRequireLicense: true,
        downloadRedirects: false,
      });
      const read = await admin("GET", `/api/admin/products/${slug}`);
      expect(read.json()).toMatchObject({ updatesRequireLicense: true, downloadRedirects: false });
      const audit = await listAudit(f.db, { limit: 50 });
      expect(
        audit.items.find((e) => e.action === "product.update_delivery" && e.target.id === slug),
      ).toMatchObject({ details: { updatesRequireLicense: true, downloadRedirects: false } });
    });

    it("the CLI sets both with on|off, audited as the CLI", async () => {
      const slug = await newProduct({});
      const cli = (...args: string[]) => runCli(f.url, args);
      const on = await cli(
        "products",
        "update",
        slug,
        "--updates-require-license",
        "on",
        "--download-redirects",
        "on",
        "--json",
      );
      expect(on.code, on.stderr).toBe(0);
      expect(JSON.parse(on.stdout)).toMatchObject({
        updatesRequireLicense: true,
        downloadRedirects: true,
      });
      expect((await get(endpoints(slug).tauri)).statusCode).toBe(401);
      const off = await cli("products", "update", slug, "--updates-require-license", "off");
      expect(off.code).toBe(0);
      expect((await get(endpoints(slug).tauri)).statusCode).toBe(200);
      const bad = await cli("products", "update", slug, "--download-redirects", "yes");
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain("--download-redirects must be on or off");
      const audit = await f.db
        .selectFrom("audit_log")
        .select(["actor_type"])
        .where("action", "=", "product.update_delivery")
        .where("target_id", "=", slug)
        .execute();
      expect(audit.map((a) => a.actor_type)).toEqual(["cli", "cli"]);
    });
  });
});
