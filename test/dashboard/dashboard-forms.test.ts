import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findProductBySlug } from "../../src/domain/products/products.js";
import { adminAccess } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

/** The message shown beside a field (page-kit's fieldError), or undefined. */
function fieldMessage(page: string, field: string): string | undefined {
  return new RegExp(`<p class="field-error" id="${field}-error">([^<]*)</p>`)
    .exec(page)?.[1]
    ?.replace(/&quot;/g, '"');
}

/** The forms of a page whose button is styled as dangerous, each with its data-confirm. */
function dangerousForms(page: string): { action: string; confirm: string | undefined }[] {
  return [...page.matchAll(/<form\s([^>]*)>((?:(?!<\/form>)[\s\S])*)<\/form>/g)]
    .filter((m) => /class="danger/.test(m[2] ?? "") || /Yank from feeds/.test(m[2] ?? ""))
    .map((m) => ({
      action: /action="([^"]*)"/.exec(m[1] ?? "")?.[1] ?? "",
      confirm: /data-confirm="([^"]*)"/.exec(m[1] ?? "")?.[1],
    }));
}

describe.each(dialects)("dashboard forms (%s)", (dialect) => {
  let f: Fixture;
  let cookie: string;
  let csrf: string;
  const get = (url: string) => f.app.inject({ method: "GET", url, headers: { cookie } });
  const post = (url: string, fields: [string, string][]) =>
    f.app.inject({
      method: "POST",
      url,
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams([["_csrf", csrf], ...fields]).toString(),
    });
  beforeAll(async () => {
    f = await createFixture(dialect, { webhooks: { allowPrivate: false, timeoutMs: 2_000 } });
    ({ cookie, csrf } = await adminAccess(f, "forms@example.com"));
  });
  afterAll(async () => {
    await f?.close();
  });

  describe("destructive buttons ask first", () => {
    it("yanking a version asks for confirmation; restoring it does not", async () => {
      const sha512 = createHash("sha512").update("1.0.0").digest("base64");
      const published = await f.post(
        "/api/releases/publish",
        {
          productSlug: f.product.slug,
          version: "1.0.0",
          channel: "STABLE",
          releases: [
            {
              platform: "LINUX",
              arch: "X64",
              downloadUrl: "https://cdn.example.com/app.tar.gz",
              signature: "sig",
              sha512,
            },
          ],
        },
        { authorization: `Bearer ${f.publishKey}` },
      );
      expect(published.statusCode, published.body).toBe(200);
      const base = `/admin/releases/${f.product.slug}/1.0.0`;
      const before = (await get(`/admin/releases?product=${f.product.slug}`)).body;
      const yank = dangerousForms(before).find((form) => form.action === `${base}/yank`);
      expect(yank?.confirm).toBe("Yank 1.0.0? The update feeds stop offering it at once.");
      // The question is asked by the dashboard's own script (no inline script under the CSP).
      expect(before).toContain('<script src="/admin/assets/app.js" defer></script>');
      expect(before).not.toMatch(/<script>|onclick=|onsubmit=/);
      expect((await post(`${base}/yank`, [])).statusCode).toBe(303);
      const after = (await get(`/admin/releases?product=${f.product.slug}`)).body;
      expect(after).toMatch(new RegExp(`action="${base}/unyank"(?![^>]*data-confirm)`));
    });

    it("every dangerous button of the pages asks first", async () => {
      const key = await f.createLicense();
      const pages = [
        `/admin/releases?product=${f.product.slug}`,
        "/admin/products",
        `/admin/licenses/${key}`,
        "/admin/admins",
        "/admin/api-keys",
        `/admin/products/${f.product.slug}/keys`,
      ];
      for (const url of pages) {
        const page = await get(url);
        expect(page.statusCode).toBe(200);
        for (const form of dangerousForms(page.body)) {
          // Pausing a rollout stops nothing already offered and is undone by Resume.
          if (form.action.endsWith("/rollout/pause")) continue;
          expect(form.confirm, `${url}: ${form.action}`).toBeTruthy();
        }
      }
    });
  });

  describe("the offline period in days", () => {
    const keys = () => `/admin/products/${f.product.slug}/keys`;
    const days = (page: string) => /name="offlinePeriodDays"[^>]*value="([^"]*)"/.exec(page)?.[1];

    it("shows the stored seconds as days, and the seconds beside them", async () => {
      const page = (await get(keys())).body;
      expect(days(page)).toBe("7");
      expect(page).toContain("604800");
      expect(page).not.toContain('name="offlinePeriodSeconds"');
    });

    it("takes whole or fractional days, stored as seconds", async () => {
      for (const [typed, seconds, shown] of [
        ["0.5", 43_200, "0.5"],
        // A decimal comma, as the decimal keypad of a phone in many locales types it.
        ["1,25", 108_000, "1.25"],
        ["30", 2_592_000, "30"],
        ["0.041667", 3_600, "0.041667"],
        ["90", 7_776_000, "90"],
      ] as const) {
        const saved = await post(`${keys()}/offline-period`, [["offlinePeriodDays", typed]]);
        expect(saved.statusCode, saved.body).toBe(303);
        expect((await findProductBySlug(f.db, f.product.slug))?.offlinePeriodSeconds).toBe(seconds);
        expect(days((await get(keys())).body)).toBe(shown);
      }
    });

    it("refuses anything else beside the field, keeping the stored period", async () => {
      for (const typed of [
        "",
        "abc",
        "-1",
        "0",
        "0.0001",
        "90.5",
        "1e3",
        "7 days",
        "1,000.5",
        "1.5,5",
      ]) {
        const refused = await post(`${keys()}/offline-period`, [["offlinePeriodDays", typed]]);
        expect(refused.statusCode).toBe(400);
        expect(fieldMessage(refused.body, "offlinePeriodDays")).toBe(
          "The offline period must be a number of days from 0.000694 (one minute) to 90",
        );
        expect(refused.body).toMatch(/name="offlinePeriodDays"[^>]*aria-invalid="true"/);
      }
      expect((await findProductBySlug(f.db, f.product.slug))?.offlinePeriodSeconds).toBe(7_776_000);
    });
  });

  describe("every invalid field shows its own message, in one round trip", () => {
    it("a new product", async () => {
      const page = (
        await post("/admin/products", [
          ["slug", "Not A Slug"],
          ["name", "x".repeat(300)],
        ])
      ).body;
      expect(fieldMessage(page, "slug")).toMatch(/^slug must be lowercase letters/);
      expect(fieldMessage(page, "name")).toMatch(/^name must be at most \d+ characters/);
      expect(page).toContain('value="Not A Slug"');
    });

    it("a new license, and a license's edit", async () => {
      const fields: [string, string][] = [
        ["productSlug", f.product.slug],
        ["licenseKey", "short"],
        ["maxMachines", "two"],
        ["expiresAt", "tomorrow"],
        ["customerEmail", "not-an-email"],
        ["customerName", "Ada"],
        ["maxDeactivationsPer30Days", "-3"],
      ];
      const created = await post("/admin/licenses", fields);
      expect(created.statusCode).toBe(400);
      const page = created.body;
      expect(fieldMessage(page, "licenseKey")).toMatch(/^licenseKey must be at least 16/);
      expect(fieldMessage(page, "maxMachines")).toBe("maxMachines must be a whole number");
      expect(fieldMessage(page, "expiresAt")).toBe("expiresAt must be a date and time");
      expect(fieldMessage(page, "customerEmail")).toBe("customerEmail must be an email address");
      expect(fieldMessage(page, "maxDeactivationsPer30Days")).toBe(
        "maxDeactivationsPer30Days must be a whole number",
      );
      expect(fieldMessage(page, "customerName")).toBeUndefined();
      expect(page).toContain('value="Ada"');
      expect(page).toContain('value="not-an-email"');

      const key = await f.createLicense();
      const edited = await post(`/admin/licenses/${key}/edit`, [
        ["maxMachines", "3"],
        ["customerEmail", "still-not-an-email"],
        ["features", "a,b"],
        ["editionName", "x".repeat(300)],
        ["maxDeactivationsPer30Days", "20000"],
      ]);
      expect(edited.statusCode).toBe(400);
      expect(fieldMessage(edited.body, "customerEmail")).toBe(
        "customerEmail must be an email address",
      );
      expect(fieldMessage(edited.body, "editionName")).toMatch(/^editionName must be at most/);
      expect(fieldMessage(edited.body, "maxDeactivationsPer30Days")).toMatch(
        /^maxDeactivationsPer30Days must be a whole number from 0 to/,
      );
      expect(fieldMessage(edited.body, "maxMachines")).toBeUndefined();
    });

    it("a new API key", async () => {
      const page = (
        await post("/admin/api-keys", [
          ["name", ""],
          ["expiresAt", "soon"],
        ])
      ).body;
      expect(fieldMessage(page, "name")).toBe("name is required");
      expect(fieldMessage(page, "scopes")).toBe("at least one scope is required");
      expect(fieldMessage(page, "expiresAt")).toBe("expiresAt must be a date and time");
    });

    it("a new webhook endpoint", async () => {
      const page = (
        await post("/admin/webhooks", [
          ["url", "http://insecure.example.com/hook"],
          ["products", "no-such-product"],
          ["description", "keep me"],
        ])
      ).body;
      expect(fieldMessage(page, "url")).toMatch(/https/);
      expect(fieldMessage(page, "events")).toBe("events must name at least one event type");
      expect(fieldMessage(page, "products")).toBe('products: no product "no-such-product"');
      expect(page).toContain('value="keep me"');
    });

    it("a new admin", async () => {
      const page = (
        await post("/admin/admins", [
          ["email", "not-an-email"],
          ["password", "short"],
        ])
      ).body;
      expect(fieldMessage(page, "email")).toBe("email must be an email address");
      expect(fieldMessage(page, "password")).toMatch(/^password must be at least \d+ characters/);
      expect(page).toContain('value="not-an-email"');
      expect(page).not.toContain('value="short"');
    });

    it("the admin API still answers with the first refusal only, as before", async () => {
      const { apiKey } = await adminAccess(f, "forms-api@example.com");
      const response = await f.app.inject({
        method: "POST",
        url: "/api/admin/products",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        payload: JSON.stringify({ slug: "Not A Slug", name: "x".repeat(300) }),
      });
      expect(response.statusCode).toBe(400);
      expect(Object.keys(response.json() as object).sort()).toEqual(["code", "error", "field"]);
      expect(response.json()).toMatchObject({ field: "name" });
    });
  });
});
