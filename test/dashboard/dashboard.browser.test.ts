import { once } from "node:events";
import { existsSync, mkdirSync } from "node:fs";
import { type Browser, chromium, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/database.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { createAdmin } from "../../src/domain/admins/admins.js";
import { createLicense } from "../../src/domain/licenses/manage-licenses.js";
import { createProduct, requireProduct } from "../../src/domain/products/products.js";
import { publishRelease } from "../../src/actions/releases.js";
import { testActor } from "../helpers/actions.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { postJson, type ServerProcess, startServer } from "../helpers/server-process.js";

/**
 * The dashboard driven in Debian's Chromium through playwright-core, against the compiled server.
 * CI installs Chromium and sets REQUIRE_BROWSER=1; elsewhere these tests are skipped when no
 * Chromium is installed, saying so.
 */
const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const haveBrowser = existsSync(chromiumPath);
if (!haveBrowser && process.env.REQUIRE_BROWSER === "1") {
  throw new Error(`REQUIRE_BROWSER=1 but no Chromium at ${chromiumPath}`);
}
const screenshots = "test-results/screenshots";

describe.skipIf(!haveBrowser)("admin dashboard in Chromium", () => {
  const email = "owner@example.com";
  const password = "a long enough password 42";
  let testDatabase: TestDatabase;
  let server: ServerProcess;
  let browser: Browser;
  let page: Page;
  let base: string;

  beforeAll(async () => {
    mkdirSync(screenshots, { recursive: true });
    testDatabase = await createTestDatabase("sqlite");
    const database = await openDatabase(testDatabase.url);
    await migrateToLatest(database.db);
    await createAdmin(database.db, { email, password });
    await createProduct(database.db, { slug: "desktop-app", name: "Desktop App" });
    await database.close();
    server = await startServer({ DATABASE_URL: testDatabase.url });
    base = server.baseUrl;
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
      ],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  });

  afterAll(async () => {
    await browser?.close();
    if (server) {
      server.child.kill("SIGTERM");
      await once(server.child, "exit");
    }
    await testDatabase?.drop();
  });

  /** Waits for the element, then reads its trimmed text (playwright-core has no web-first expect). */
  const textOf = async (locator: Locator) => {
    await locator.waitFor();
    return (await locator.textContent())?.trim();
  };

  const shot = (name: string) =>
    page.screenshot({ path: `${screenshots}/${name}.png`, fullPage: true });

  it("a wrong password shows an error and does not sign in", async () => {
    await page.goto(`${base}/admin/licenses`);
    expect(new URL(page.url()).pathname).toBe("/admin/login");
    await shot("login");
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill("not the password");
    await page.getByRole("button", { name: "Sign in" }).click();
    expect(await textOf(page.getByRole("alert"))).toBe("Wrong email or password.");
    expect(new URL(page.url()).pathname).toBe("/admin/login");
  });

  it("signs in", async () => {
    await page.goto(`${base}/admin/login`);
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${base}/admin`);
    expect(await textOf(page.getByRole("heading", { level: 1 }))).toBe("Overview");
    // uPlot, served from our own assets, drew both charts.
    await page.locator("figure.chart .uplot canvas").nth(1).waitFor();
    await shot("overview-empty");
  });

  it("creates an API key with releases:write, publishes with it over HTTP, and sees the release", async () => {
    await page.getByRole("link", { name: "API Keys" }).click();
    await page.getByLabel("Name").fill("GitHub Actions");
    await page.getByLabel("releases:write").check();
    await page.getByRole("button", { name: "Create key" }).click();
    const secret = (await page.locator("#new-secret").textContent())?.trim() ?? "";
    expect(secret).toMatch(/^shk_/);
    await shot("api-keys-created");

    const published = await postJson(
      base,
      "/api/releases/publish",
      {
        productSlug: "desktop-app",
        version: "v2.3.0",
        channel: "BETA",
        releaseNotes: "## New\n- Sync",
        releases: [
          {
            platform: "WINDOWS",
            arch: "X64",
            downloadUrl: "https://dl.example.com/app-2.3.0.msi",
            fileSize: 73400320,
          },
          { platform: "MACOS", arch: "ARM64", downloadUrl: "https://dl.example.com/app-2.3.0.dmg" },
        ],
      },
      { authorization: `Bearer ${secret}` },
    );
    expect(published.status).toBe(200);

    await page.getByRole("link", { name: "Releases" }).click();
    const release = page.locator('[data-version="2.3.0"]');
    await release.getByRole("heading", { name: "2.3.0" }).waitFor({ state: "visible" });
    expect(await release.locator("td.yes").count()).toBe(2);
    await shot("releases");

    // The notes are Markdown; the feeds section is collapsed once a release exists.
    expect(await textOf(release.locator(".notes h2"))).toBe("New");
    expect(await textOf(release.locator(".notes li"))).toBe("Sync");
    expect(await page.locator("#feeds").getAttribute("open")).toBeNull();

    page.once("dialog", (dialog) => void dialog.accept());
    await release.getByRole("button", { name: "Remove MACOS ARM64 of 2.3.0" }).click();
    expect(await textOf(page.getByRole("status"))).toBe("File removed.");
    expect(await page.locator('[data-version="2.3.0"] td.yes').count()).toBe(1);
  });

  it("renders hostile release notes inertly and copies a feed configuration, with no CSP violation", async () => {
    const violations: string[] = [];
    const onConsole = (message: { text(): string }) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
    };
    page.on("console", onConsole);
    let dialogs = 0;
    const onDialog = () => void (dialogs += 1);
    page.on("dialog", onDialog);
    const database = await openDatabase(testDatabase.url);
    try {
      await publishRelease(
        database.db,
        testActor,
        await requireProduct(database.db, "desktop-app"),
        {
          version: "2.4.0",
          channel: "STABLE",
          releaseNotes:
            '<script>alert(1)</script> <img src=x onerror="alert(2)"> [x](javascript:alert(3))\n\n| a | b |\n|:-:|--:|\n| 1 | 2 |',
          entries: [
            {
              platform: "LINUX",
              arch: "X64",
              downloadUrl: "https://dl.example.com/app.AppImage",
              signature: null,
              fileSize: null,
            },
          ],
        },
      );
    } finally {
      await database.close();
    }
    await page.goto(`${base}/admin/releases?product=desktop-app`);
    const release = page.locator('[data-version="2.4.0"]');
    expect(await textOf(release.locator(".notes p"))).toContain("<script>alert(1)</script>");
    expect(await release.locator(".notes script, .notes img, .notes a").count()).toBe(0);
    expect(await release.locator(".notes td.align-right").count()).toBe(1);
    // Newest first: 2.4.0 above 2.3.0.
    const versions = await page
      .locator("section.release")
      .evaluateAll((sections) => sections.map((s) => s.getAttribute("data-version")));
    expect(versions).toEqual(["2.4.0", "2.3.0"]);

    await page.locator("#feeds summary").click();
    const tauri = page.locator('[data-client="tauri"]');
    await tauri.getByRole("button", { name: "Copy" }).click();
    // The copy handler awaits the clipboard: poll for its label, with a deadline.
    await expect
      .poll(() => textOf(tauri.getByRole("button")), { timeout: 5000 })
      .toMatch(/^(Copied|Press Ctrl\+C)$/);
    const config = JSON.parse((await tauri.locator("code").textContent()) ?? "");
    expect(config.plugins.updater.endpoints).toEqual([
      `${base}/api/updates/desktop-app/tauri/{{target}}/{{arch}}/{{current_version}}`,
    ]);
    await shot("releases-feeds");
    page.off("console", onConsole);
    page.off("dialog", onDialog);
    expect(dialogs).toBe(0);
    expect(violations).toEqual([]);
  });

  it("creates a license, sees a machine activated over the API with its last-seen, deactivates it, and validate then fails", async () => {
    await page.getByRole("link", { name: "Licenses" }).click();
    await page.getByRole("link", { name: "New license" }).click();
    await page.getByLabel("License key").fill("BROWSER-TEST-LICENSE-1");
    await page.getByLabel("Machine slots").fill("2");
    await page.getByLabel("Customer name").fill("Ada Lovelace");
    await page.getByRole("button", { name: "Create license" }).click();
    expect(await textOf(page.getByRole("status"))).toBe("License created.");

    const machine = {
      licenseKey: "BROWSER-TEST-LICENSE-1",
      machineId: "ada-laptop",
      productSlug: "desktop-app",
    };
    expect(
      (await postJson(base, "/api/license/activate", { ...machine, machineName: "Ada's laptop" }))
        .status,
    ).toBe(200);
    await page.reload();
    const row = page.locator('tr[data-machine="ada-laptop"]');
    expect(await textOf(row)).toContain("Ada's laptop");
    expect(await row.locator(".last-seen time").getAttribute("datetime")).toMatch(/Z$/);
    await shot("license-detail");

    page.once("dialog", (dialog) => void dialog.accept());
    await row.getByRole("button", { name: "Deactivate" }).click();
    expect(await textOf(page.getByRole("status"))).toBe("Machine deactivated; its slot is free.");
    expect(await page.locator('tr[data-machine="ada-laptop"]').count()).toBe(0);

    const validate = await postJson(base, "/api/license/validate", machine);
    expect(validate.status).toBe(403);
    expect(validate.body.error).toBe("Machine not activated");
  });

  it("resets a license's machines, then deletes the license", async () => {
    await page.getByRole("link", { name: "Licenses" }).click();
    await page.getByRole("link", { name: "New license" }).click();
    await page.getByLabel("License key").fill("BROWSER-TEST-SEATS-1");
    await page.getByLabel("Machine slots").fill("2");
    await page.getByRole("button", { name: "Create license" }).click();
    expect(await textOf(page.getByRole("status"))).toBe("License created.");
    for (const machineId of ["seat-a", "seat-b"]) {
      const machine = { licenseKey: "BROWSER-TEST-SEATS-1", machineId, productSlug: "desktop-app" };
      expect((await postJson(base, "/api/license/activate", machine)).status).toBe(200);
    }
    await page.reload();
    expect(await page.locator("tr[data-machine]").count()).toBe(2);
    // Deleting is offered only once no machine holds a slot.
    expect(await page.getByRole("button", { name: "Delete license" }).count()).toBe(0);

    page.once("dialog", (dialog) => void dialog.accept());
    await page.getByRole("button", { name: "Reset machines" }).click();
    expect(await textOf(page.getByRole("status"))).toBe(
      "Every machine deactivated; the slots are free.",
    );
    expect(await page.locator("tr[data-machine]").count()).toBe(0);

    page.once("dialog", (dialog) => void dialog.accept());
    await page.getByRole("button", { name: "Delete license" }).click();
    expect(new URL(page.url()).pathname).toBe("/admin/licenses");
    const validate = await postJson(base, "/api/license/validate", {
      licenseKey: "BROWSER-TEST-SEATS-1",
      machineId: "seat-a",
      productSlug: "desktop-app",
    });
    expect(validate.status).toBe(404);
  });

  it("renders the products and audit pages", async () => {
    await page.getByRole("link", { name: "Products" }).click();
    await page.getByRole("cell", { name: "desktop-app" }).waitFor({ state: "visible" });
    await shot("products");
    await page.getByLabel("Name of desktop-app").fill("Desktop App Pro");
    await page.getByRole("button", { name: "Rename" }).click();
    expect(await textOf(page.getByRole("status"))).toBe("Product renamed.");
    expect(await page.getByLabel("Name of desktop-app").inputValue()).toBe("Desktop App Pro");
    await page.getByRole("link", { name: "Audit log" }).click();
    await page.getByRole("cell", { name: "license.create" }).first().waitFor({ state: "visible" });
    await page.getByRole("cell", { name: "api_key.create" }).waitFor({ state: "visible" });
    await shot("audit");
  });

  it("reloading the page that shows a new API key creates no second key, and no longer shows it", async () => {
    const keysNamed = async (name: string) => {
      const database = await openDatabase(testDatabase.url);
      try {
        return (
          await database.db.selectFrom("api_keys").select("id").where("name", "=", name).execute()
        ).length;
      } finally {
        await database.close();
      }
    };
    await page.getByRole("link", { name: "API Keys" }).click();
    await page.getByLabel("Name").fill("Reload check");
    await page.getByLabel("releases:read").check();
    await page.getByRole("button", { name: "Create key" }).click();
    const secret = (await textOf(page.locator("#new-secret"))) ?? "";
    expect(secret).toMatch(/^shk_/);
    expect(page.url()).not.toContain(secret);
    expect(await keysNamed("Reload check")).toBe(1);

    await page.reload();
    await page.getByRole("heading", { name: "New API key" }).waitFor();
    expect(await page.locator("#new-secret").count()).toBe(0);
    expect(await page.content()).not.toContain(secret);
    expect(await page.getByRole("cell", { name: "Reload check" }).count()).toBe(1);
    expect(await keysNamed("Reload check")).toBe(1);
  });

  it("manages admins: adds one, resets its password, removes it", async () => {
    await page.getByRole("link", { name: "Admins" }).click();
    await page.getByLabel("Email").fill("second@example.com");
    await page
      .locator('form[action="/admin/admins"]')
      .getByLabel("Password")
      .fill("second admin's password");
    await page.getByRole("button", { name: "Add admin" }).click();
    expect(await textOf(page.getByRole("status"))).toBe("Admin added.");
    await shot("admins");
    await page.getByLabel("New password for second@example.com").fill("another long password");
    await page
      .locator('tr[data-admin="second@example.com"]')
      .getByRole("button", { name: "Reset password" })
      .click();
    expect(await textOf(page.getByRole("status"))).toBe(
      "Password reset; that admin's sessions have ended.",
    );
    page.once("dialog", (dialog) => void dialog.accept());
    await page.getByRole("button", { name: "Remove second@example.com" }).click();
    expect(await textOf(page.getByRole("status"))).toBe(
      "Admin removed; their sessions have ended.",
    );
    expect(await page.locator('tr[data-admin="second@example.com"]').count()).toBe(0);
  });

  it("refuses a POST without the CSRF token, even with a valid session", async () => {
    const response = await page.request.post(`${base}/admin/products`, {
      form: { name: "Sneaky", slug: "sneaky" },
    });
    expect(response.status()).toBe(403);
    await page.goto(`${base}/admin/products`);
    expect(await page.getByRole("cell", { name: "sneaky" }).count()).toBe(0);
  });

  it("sends the security headers on dashboard pages", async () => {
    const response = await page.request.get(`${base}/admin/licenses`);
    const headers = response.headers();
    expect(headers["content-security-policy"]).toContain("script-src 'self'");
    expect(headers["content-security-policy"]).not.toContain("unsafe-inline");
    expect(headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(headers["x-content-type-options"]).toBe("nosniff");
    expect(headers["referrer-policy"]).toBe("same-origin");
  });

  it("shows a refused move on the license's page once, and asks before a yank", async () => {
    const database = await openDatabase(testDatabase.url);
    try {
      await createProduct(database.db, { slug: "other-app", name: "Other App" });
      for (const [productSlug, licenseKey] of [
        ["other-app", "BROWSER-OTHER-LICENSE-1"],
        ["desktop-app", "BROWSER-MOVE-LICENSE-1"],
      ] as const) {
        await createLicense(database.db, {
          productSlug,
          licenseKey,
          maxMachines: 1,
          externalId: "order-7",
        });
      }
    } finally {
      await database.close();
    }
    const licensePath = "/admin/licenses/BROWSER-MOVE-LICENSE-1";
    await page.goto(`${base}${licensePath}`);
    await page.getByLabel("Move to product").selectOption("other-app");
    await page.getByRole("button", { name: "Move", exact: true }).click();
    expect(await textOf(page.locator(".notice"))).toBe(
      "externalId is already used by another license of this product",
    );
    expect(new URL(page.url()).pathname).toBe(licensePath);
    await shot("refused-action");
    await page.reload();
    await page.getByRole("heading", { level: 1 }).waitFor();
    expect(await page.locator(".notice").count()).toBe(0);

    await page.goto(`${base}/admin/releases?product=desktop-app`);
    const release = page.locator('[data-version="2.3.0"]');
    const asked: string[] = [];
    page.once("dialog", (dialog) => {
      asked.push(dialog.message());
      void dialog.dismiss();
    });
    await release.getByRole("button", { name: "Yank from feeds" }).click();
    expect(asked).toEqual(["Yank 2.3.0? The update feeds stop offering it at once."]);
    expect(await release.locator(".badge-yanked").count()).toBe(0);
    page.once("dialog", (dialog) => void dialog.accept());
    await release.getByRole("button", { name: "Yank from feeds" }).click();
    expect(await textOf(page.getByRole("status"))).toBe(
      "Version yanked: the update feeds no longer offer it.",
    );
    await page
      .locator('[data-version="2.3.0"]')
      .getByRole("button", { name: "Restore to feeds" })
      .click();
    expect(await textOf(page.getByRole("status"))).toBe("Version restored to the update feeds.");

    const missing = await page.goto(`${base}/admin/no-such-page`);
    expect(missing?.status()).toBe(404);
    expect(await textOf(page.getByRole("heading", { level: 1 }))).toBe("Page not found");
    expect(await page.getByRole("link", { name: "Licenses" }).count()).toBe(1);
    await shot("not-found");
  });

  it("edits a webhook endpoint, showing each refused field, and rotates its secret after asking", async () => {
    await page.goto(`${base}/admin/webhooks`);
    await page.getByLabel("URL").fill("https://crm.example.com/hooks");
    await page.getByLabel("license.created").check();
    await page.getByRole("button", { name: "Create endpoint" }).click();
    await page.locator("#new-secret").waitFor();
    await page.getByRole("link", { name: "https://crm.example.com/hooks" }).click();
    await page.getByRole("heading", { name: "Settings" }).waitFor();
    const endpointPath = new URL(page.url()).pathname;

    const settings = page.locator(`form[action="${endpointPath}/edit"]`);
    await settings.getByLabel("URL").fill("ftp://crm.example.com/hooks");
    await settings.getByLabel("license.created").uncheck();
    await settings.getByRole("button", { name: "Save settings" }).click();
    expect(await textOf(page.locator("#url-error"))).toBe("url must be an https URL");
    expect(await textOf(page.locator("#events-error"))).toBe(
      "events must name at least one event type",
    );
    await shot("webhook-refused-settings");
    await settings.getByLabel("URL").fill("https://crm.example.com/v2/hooks");
    await settings.getByLabel("machine.activated").check();
    await settings.getByLabel("Enabled").uncheck();
    await settings.getByRole("button", { name: "Save settings" }).click();
    expect(await textOf(page.getByRole("status"))).toBe("Endpoint saved.");
    expect(await settings.getByLabel("URL").inputValue()).toBe("https://crm.example.com/v2/hooks");
    expect(await page.locator(".badge-disabled").count()).toBe(1);

    const asked: string[] = [];
    page.once("dialog", (dialog) => {
      asked.push(dialog.message());
      void dialog.dismiss();
    });
    await page.getByRole("button", { name: "Rotate secret" }).click();
    expect(asked).toEqual([
      "Give https://crm.example.com/v2/hooks a new signing secret? The receiver must be given it.",
    ]);
    expect(await page.locator("#new-secret").count()).toBe(0);
    await page.getByLabel(/keeps signing beside the new one/).selectOption("3600");
    page.once("dialog", (dialog) => void dialog.accept());
    await page.getByRole("button", { name: "Rotate secret" }).click();
    expect(await textOf(page.locator("#new-secret"))).toMatch(/^whsec_/);
    expect(await textOf(page.locator("#rotated-title"))).toBe("New signing secret");
    await shot("webhook-rotated");
    await page.reload();
    await page.getByRole("heading", { name: "Settings" }).waitFor();
    expect(await page.locator("#new-secret").count()).toBe(0);

    const phone = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await phone.context().addCookies(await page.context().cookies());
    await phone.goto(`${base}${endpointPath}`);
    const widths = await phone.evaluate<{ scrollWidth: number; innerWidth: number }>(
      "({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth })",
    );
    await phone.screenshot({ path: `${screenshots}/phone-webhook-endpoint.png`, fullPage: true });
    await phone.close();
    expect(widths.scrollWidth).toBeLessThanOrEqual(widths.innerWidth);
  });

  /** Every page of the dashboard, signed in, with the data the tests above made. */
  const everyPage = [
    ["overview", "/admin"],
    ["overview-product", "/admin?product=desktop-app"],
    ["licenses", "/admin/licenses"],
    ["licenses-sorted", "/admin/licenses?sort=customer&dir=asc"],
    ["license-new", "/admin/licenses/new"],
    ["license-detail", "/admin/licenses/BROWSER-TEST-LICENSE-1"],
    ["license-history", "/admin/licenses/BROWSER-TEST-LICENSE-1/history"],
    ["products", "/admin/products"],
    ["product-keys", "/admin/products/desktop-app/keys"],
    ["releases", "/admin/releases?product=desktop-app"],
    ["api-keys", "/admin/api-keys"],
    ["webhooks", "/admin/webhooks"],
    ["integrations", "/admin/integrations"],
    ["audit", "/admin/audit"],
    ["audit-filtered", "/admin/audit?action=license"],
    ["admins", "/admin/admins"],
    ["not-found", "/admin/no-such-page"],
  ] as const;

  /** Opens a page of everyPage, expecting its own address (a 404 for the unknown one). */
  const open = async (on: Page, path: string) => {
    const response = await on.goto(`${base}${path}`);
    expect(response?.status(), path).toBe(path === "/admin/no-such-page" ? 404 : 200);
    expect(new URL(on.url()).pathname, path).toBe(path.split("?")[0]);
  };

  const sideways = async (on: Page) => {
    const { scrollWidth, innerWidth } = await on.evaluate<{
      scrollWidth: number;
      innerWidth: number;
    }>("({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth })");
    return scrollWidth > innerWidth ? `${scrollWidth} > ${innerWidth}` : null;
  };

  it("fits a 390 px phone: no page scrolls sideways, tables scroll in their own box", async () => {
    // The overview's panels of things to look at: an endpoint failing (as the delivery worker
    // leaves it) and a version in a rollout.
    const database = await openDatabase(testDatabase.url);
    try {
      await database.db
        .updateTable("webhook_endpoints")
        .set({ consecutive_failures: 22, failing_since: Date.now() - 3_600_000 })
        .execute();
      await database.db
        .updateTable("release_versions")
        .set({ rollout_started_at: Date.now(), rollout_percent: 10 })
        .where("version", "=", "2.4.0")
        .execute();
    } finally {
      await database.close();
    }
    await page.goto(`${base}/admin`);
    expect(await page.locator("#failing-endpoints li").count()).toBe(1);
    expect(await textOf(page.locator("#rollouts li"))).toMatch(/2\.4\.0\s+STABLE\s+at 10 %/);
    await shot("overview-attention");
    const phone = await browser.newPage({ viewport: { width: 390, height: 844 } });
    const overflowing: string[] = [];
    // Signed out first: the sign-in page.
    await phone.goto(`${base}/admin/login`);
    const login = await sideways(phone);
    if (login) overflowing.push(`/admin/login: ${login}`);
    await phone.screenshot({ path: `${screenshots}/phone-login.png`, fullPage: true });
    await phone.context().addCookies(await page.context().cookies());
    for (const [name, path] of everyPage) {
      await open(phone, path);
      const wide = await sideways(phone);
      if (wide) overflowing.push(`${path}: ${wide}`);
      await phone.screenshot({ path: `${screenshots}/phone-${name}.png`, fullPage: true });
    }
    await phone.close();
    expect(overflowing).toEqual([]);
  });

  it("at 1280 px hides no table's last column behind a scroll, keeps keys on one line and audit details readable", async () => {
    const machine = {
      licenseKey: "BROWSER-TEST-LICENSE-1",
      machineId: "a-machine-id-as-long-as-a-uuid-0f8e4c2a-9d1b",
      machineName: "Ada's second laptop, the big one",
      appVersion: "2.3.0-beta.12",
      platform: "MACOS",
      productSlug: "desktop-app",
    };
    expect((await postJson(base, "/api/license/activate", machine)).status).toBe(200);
    // Every row's last cell within its table's scroll box: what is right of it needs a scroll.
    const hiddenCells = `[...document.querySelectorAll("main table")].flatMap((table, t) => {
      const box = (table.closest(".table-wrap") ?? table).getBoundingClientRect();
      return [...table.rows].flatMap((row, r) => {
        const last = row.cells[row.cells.length - 1];
        if (!last) return [];
        const right = last.getBoundingClientRect().right;
        return right > box.right + 1 ? ["table " + t + " row " + r + ": " + right + " > " + box.right] : [];
      });
    })`;
    const hidden: string[] = [];
    for (const [, path] of everyPage) {
      await open(page, path);
      const wide = await sideways(page);
      if (wide) hidden.push(`${path}: the page scrolls, ${wide}`);
      for (const cell of await page.evaluate<string[]>(hiddenCells))
        hidden.push(`${path}: ${cell}`);
    }
    expect(hidden).toEqual([]);

    await open(page, "/admin/licenses/BROWSER-TEST-LICENSE-1");
    await page
      .locator(`tr[data-machine="${machine.machineId}"]`)
      .getByRole("button", { name: "Deactivate" })
      .waitFor({ state: "visible" });
    await shot("license-detail-wide");

    await open(page, "/admin/licenses");
    const keyLines = await page.evaluate<number[]>(
      `[...document.querySelectorAll("table.licenses tbody td:first-child a")].map((a) => a.getClientRects().length)`,
    );
    expect(keyLines.length).toBeGreaterThan(0);
    expect(keyLines.every((lines) => lines === 1)).toBe(true);

    await open(page, "/admin/audit");
    const detailWidths = await page.evaluate<number[]>(
      `[...document.querySelectorAll("td.details")].map((td) => td.getBoundingClientRect().width)`,
    );
    expect(detailWidths.length).toBeGreaterThan(0);
    expect(Math.min(...detailWidths)).toBeGreaterThanOrEqual(240);
    await shot("audit-wide");
  });

  it("signs out", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${base}/admin/login`);
    await page.goto(`${base}/admin/licenses`);
    expect(new URL(page.url()).pathname).toBe("/admin/login");
  });
});
