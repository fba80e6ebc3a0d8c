import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import { createLicense } from "../../src/domain/licenses/manage-licenses.js";
import { publishRelease } from "../../src/actions/releases.js";
import { inTransaction } from "../../src/db/transaction.js";
import { enqueueLicenseDelivered } from "../../src/domain/email/messages.js";
import { testActor } from "../helpers/actions.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { apiKeyScopes } from "../../src/contracts/vocabulary.js";

type Method = "GET" | "POST" | "PATCH" | "DELETE";

/** Every table an admin route can change, without the acting key's last_used_at. */
const tables = [
  "products",
  "licenses",
  "activations",
  "release_versions",
  "release_artifacts",
  "api_keys",
  "signing_keys",
  "audit_log",
  "email_messages",
  "email_templates",
  "product_email_settings",
] as const;

/**
 * A key limited to products (api_keys.products) reaches only those: every admin route of the
 * OpenAPI document (generated from the app) that names another product refuses it with 403
 * PRODUCT_NOT_IN_KEY and changes nothing; the lists hold only its products; publish refuses
 * another product after the spec's 404. Both databases.
 */
describe.each(dialects)("API keys limited to products (%s)", (dialect) => {
  let f: Fixture;
  /** Limited to desktop-app, with every scope. */
  let limited: { id: string; key: string };
  /** Every product, every scope. */
  let unlimited: { id: string; key: string };
  let otherLicense: string;
  /** A message of the outbox about the other product's license. */
  let otherEmail: string;
  let ownLicense: string;
  let operations: Array<{ method: Method; path: string }>;

  beforeAll(async () => {
    f = await createFixture(dialect);
    limited = await createApiKey(f.db, {
      name: "desktop pipeline",
      scopes: [...apiKeyScopes],
      productIds: [f.product.id],
    });
    unlimited = await createApiKey(f.db, { name: "everything", scopes: [...apiKeyScopes] });
    ownLicense = (
      await createLicense(f.db, { productSlug: f.product.slug, maxMachines: 2, customerName: "A" })
    ).licenseKey;
    otherLicense = (
      await createLicense(f.db, {
        productSlug: f.otherProduct.slug,
        maxMachines: 2,
        licenseKey: "OTHER-APP-LICENSE-0001",
        customerName: "B",
      })
    ).licenseKey;
    otherEmail = (
      await inTransaction(f.db, async (trx) =>
        enqueueLicenseDelivered(trx, {
          license: { licenseKey: otherLicense, expiresAt: null, maxMachines: 2 },
          product: f.otherProduct,
          customerEmail: "b@example.com",
          customerName: "B",
          idempotencyKey: "order-b",
        }),
      )
    ).id;
    const activated = await f.post("/api/license/activate", {
      licenseKey: otherLicense,
      productSlug: f.otherProduct.slug,
      machineId: "machine-of-b",
    });
    expect(activated.statusCode).toBe(200);
    for (const product of [f.product, f.otherProduct]) {
      await publishRelease(f.db, testActor, product, {
        version: "1.0.0",
        channel: "STABLE",
        releaseNotes: null,
        entries: [
          {
            platform: "WINDOWS",
            arch: "X64",
            downloadUrl: `https://downloads.example.com/${product.slug}/1.0.0.exe`,
            signature: null,
            fileSize: null,
          },
        ],
      });
    }
    // An audit entry about each product, by an admin key.
    for (const slug of [f.product.slug, f.otherProduct.slug]) {
      const renamed = await callWithApiKey(
        f,
        unlimited.key,
        "PATCH",
        `/api/admin/products/${slug}`,
        {
          name: `${slug} renamed`,
        },
      );
      expect(renamed.statusCode).toBe(200);
    }
    // And about each license.
    for (const licenseKey of [ownLicense, otherLicense]) {
      const noted = await callWithApiKey(
        f,
        unlimited.key,
        "PATCH",
        `/api/admin/licenses/${licenseKey}`,
        {
          note: "checked",
        },
      );
      expect(noted.statusCode).toBe(200);
    }
    const doc = (await f.app.inject({ url: "/openapi.json" })).json<{
      paths: Record<string, Record<string, unknown>>;
    }>();
    operations = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith("/api/admin/"))
      .flatMap(([path, methods]) =>
        Object.keys(methods).map((method) => ({ method: method.toUpperCase() as Method, path })),
      );
  });
  afterAll(async () => {
    await f.close();
  });

  const snapshot = async () => {
    const result: Record<string, unknown[]> = {};
    for (const table of tables) {
      const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(
        table,
      )}`.execute(f.db);
      result[table] = rows
        .map((row) => {
          const copy = { ...row };
          delete copy.last_used_at;
          return JSON.stringify(copy);
        })
        .sort();
    }
    return result;
  };

  /** The route's URL naming the other product (or its license, release, machine, key). */
  const urlFor = (path: string, otherKeyId: string) =>
    path
      .replace("{slug}", f.otherProduct.slug)
      .replace("{licenseKey}", otherLicense)
      .replace("{version}", "1.0.0")
      .replace("{platform}", "WINDOWS")
      .replace("{arch}", "X64")
      .replace("{machineId}", "machine-of-b")
      .replace("{kid}", "any-kid")
      .replace("{plan}", "any-plan")
      .replace("{id}", path.startsWith("/api/admin/emails/") ? otherEmail : otherKeyId);

  /** A body the route would accept, naming the other product where a body names one. */
  const bodyFor = (method: Method, path: string): unknown => {
    if (method === "GET" || method === "DELETE") return undefined;
    if (path === "/api/admin/licenses") {
      return { productSlug: f.otherProduct.slug, maxMachines: 1 };
    }
    if (path === "/api/admin/products") return { slug: "brand-new-app", name: "Brand New" };
    if (path === "/api/admin/api-keys") {
      return { name: "for other", scopes: ["releases:write"], products: [f.otherProduct.slug] };
    }
    if (path === "/api/admin/products/{slug}") return { name: "Taken Over" };
    if (path === "/api/admin/licenses/{licenseKey}") return { maxMachines: 9 };
    if (path.endsWith("/keys/promote")) return { force: true };
    if (path.endsWith("/rollout")) return { percent: 10 };
    if (path.endsWith("/critical")) return { critical: true };
    if (path.endsWith("/plans")) return { slug: "taken-over", name: "Taken", maxMachines: 1 };
    if (path.endsWith("/plans/{plan}")) return { name: "Taken Over" };
    if (path.endsWith("/plans/{plan}/licenses")) return {};
    // Moving the other product's license to the key's own product: still the other product's.
    if (path.endsWith("/move")) return { productSlug: f.product.slug };
    if (path.endsWith("/email")) return { vendorName: "Taken Over" };
    return undefined;
  };

  /** The list routes: they answer, holding only the key's products. */
  const listRoutes = new Set([
    "GET /api/admin/products",
    "GET /api/admin/licenses",
    "GET /api/admin/api-keys",
    "GET /api/admin/audit",
    "GET /api/admin/emails",
  ]);

  it("every admin route naming another product refuses the key, 403 PRODUCT_NOT_IN_KEY, and changes nothing", async () => {
    // A key for the other product, which the limited key may not revoke.
    const otherKey = await createApiKey(f.db, {
      name: "other pipeline",
      scopes: ["releases:write"],
      productIds: [f.otherProduct.id],
    });
    const naming = operations.filter(({ method, path }) => !listRoutes.has(`${method} ${path}`));
    // Every admin route is either a list or names a product: a new route is classified here.
    expect(naming.length + listRoutes.size).toBe(operations.length);
    expect(naming.length).toBeGreaterThanOrEqual(22);

    const before = await snapshot();
    const wrong: string[] = [];
    for (const { method, path } of naming) {
      const url = urlFor(path, otherKey.id);
      const response = await callWithApiKey(f, limited.key, method, url, bodyFor(method, path));
      const body = response.json<{ code?: string; error?: string }>();
      const named =
        path === "/api/admin/products"
          ? "brand-new-app"
          : // Revoking keys, managing webhook endpoints and payment integrations: refused
            // whatever they name.
            (path.endsWith("/revoke") && path.includes("api-keys")) ||
              path.startsWith("/api/admin/webhook-endpoints") ||
              path.startsWith("/api/admin/integrations")
            ? ""
            : f.otherProduct.slug;
      if (
        response.statusCode !== 403 ||
        body.code !== "PRODUCT_NOT_IN_KEY" ||
        !String(body.error).includes(named)
      ) {
        wrong.push(`${method} ${url}: ${response.statusCode} ${response.body.slice(0, 160)}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(await snapshot()).toEqual(before);
  });

  it("the same routes serve the key's own product (the refusal is about the product)", async () => {
    const own = [
      ["GET", `/api/admin/products/${f.product.slug}`],
      ["GET", `/api/admin/products/${f.product.slug}/releases`],
      ["GET", `/api/admin/licenses/${ownLicense}`],
      ["POST", `/api/admin/products/${f.product.slug}/releases/1.0.0/yank`],
      ["POST", `/api/admin/products/${f.product.slug}/releases/1.0.0/unyank`],
    ] as const;
    for (const [method, url] of own) {
      const response = await callWithApiKey(f, limited.key, method, url);
      expect(response.statusCode, `${method} ${url}`).toBe(200);
    }
    const created = await callWithApiKey(f, limited.key, "POST", "/api/admin/licenses", {
      productSlug: f.product.slug,
      maxMachines: 1,
    });
    expect(created.statusCode).toBe(201);
    // An unknown product or license is still 404, as for any key.
    const unknown = await callWithApiKey(f, limited.key, "GET", "/api/admin/products/no-such-app");
    expect(unknown.statusCode).toBe(404);
  });

  it("its lists hold only its product: products, licenses, audit entries, API keys", async () => {
    const products = await callWithApiKey(f, limited.key, "GET", "/api/admin/products");
    expect(products.json<{ items: Array<{ slug: string }> }>().items.map((p) => p.slug)).toEqual([
      f.product.slug,
    ]);

    const licenses = await callWithApiKey(f, limited.key, "GET", "/api/admin/licenses?limit=200");
    const licenseItems = licenses.json<{ items: Array<{ product: string; licenseKey: string }> }>()
      .items;
    expect(licenseItems.length).toBeGreaterThan(0);
    expect(licenseItems.map((l) => l.licenseKey)).not.toContain(otherLicense);
    // The product filter cannot widen it.
    const filtered = await callWithApiKey(
      f,
      limited.key,
      "GET",
      `/api/admin/licenses?product=${f.otherProduct.slug}`,
    );
    expect(filtered.json<{ items: unknown[] }>().items).toEqual([]);

    const audit = await callWithApiKey(f, limited.key, "GET", "/api/admin/audit?limit=200");
    const entries = audit.json<{ items: Array<{ target: { type: string; id: string } }> }>().items;
    expect(entries.length).toBeGreaterThan(0);
    // The log names licenses by id.
    const idOf = async (licenseKey: string) =>
      (
        await f.db
          .selectFrom("licenses")
          .select("id")
          .where("license_key", "=", licenseKey)
          .executeTakeFirstOrThrow()
      ).id;
    const [ownId, otherId] = [await idOf(ownLicense), await idOf(otherLicense)];
    expect(entries.some((e) => e.target.type === "license" && e.target.id === ownId)).toBe(true);
    for (const { target } of entries) {
      expect(
        (target.type === "product" && target.id === f.product.slug) ||
          (target.type === "release" && target.id.startsWith(`${f.product.slug}@`)) ||
          target.type === "license",
        JSON.stringify(target),
      ).toBe(true);
      expect(JSON.stringify(target)).not.toContain(f.otherProduct.slug);
      expect(target.id).not.toBe(otherId);
    }
    const everything = await callWithApiKey(f, unlimited.key, "GET", "/api/admin/audit?limit=200");
    expect(everything.json<{ items: unknown[] }>().items.length).toBeGreaterThan(entries.length);

    const keys = await callWithApiKey(f, limited.key, "GET", "/api/admin/api-keys");
    const keyItems = keys.json<{ items: Array<{ products: string[] | null }> }>().items;
    expect(keyItems.length).toBeGreaterThan(0);
    for (const key of keyItems) expect(key.products).toEqual([f.product.slug]);
  });

  it("publish: another product is 403 PRODUCT_NOT_IN_KEY after the spec's 404, and writes nothing", async () => {
    const publisher = await createApiKey(f.db, {
      name: "desktop ci",
      scopes: ["releases:write"],
      productIds: [f.product.id],
    });
    const publish = (productSlug: string, version = "2.0.0") =>
      f.post(
        "/api/releases/publish",
        {
          productSlug,
          version,
          channel: "STABLE",
          releases: [
            { platform: "LINUX", arch: "X64", downloadUrl: "https://example.com/app.AppImage" },
          ],
        },
        { authorization: `Bearer ${publisher.key}` },
      );
    const before = await snapshot();
    const refused = await publish(f.otherProduct.slug);
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({
      error: `Product "${f.otherProduct.slug}" is not among this API key's products`,
      code: "PRODUCT_NOT_IN_KEY",
    });
    expect(await snapshot()).toEqual(before);
    expect((await publish("no-such-app")).statusCode).toBe(404);
    // The spec's checks before the product come first.
    expect((await publish(f.otherProduct.slug, "not-a-version")).json()).toMatchObject({
      code: "INVALID_VERSION",
    });
    expect((await publish(f.product.slug)).statusCode).toBe(200);

    // Without releases:write it is still 403 Missing required scope, before anything else.
    const reader = await createApiKey(f.db, {
      name: "desktop reader",
      scopes: ["releases:read"],
      productIds: [f.product.id],
    });
    const noScope = await f.post(
      "/api/releases/publish",
      {},
      { authorization: `Bearer ${reader.key}` },
    );
    expect(noScope.statusCode).toBe(403);
    expect(noScope.json()).toMatchObject({ code: "MISSING_SCOPE" });
  });

  it("the dashboard's form limits a key to the products ticked, and the page shows each key's products", async () => {
    const { cookie, csrf } = await adminAccess(f, "keys-per-product@example.com");
    const form = new URLSearchParams({ _csrf: csrf, name: "dashboard pipeline" });
    form.append("scopes", "releases:write");
    form.append("products", f.otherProduct.slug);
    const created = await f.app.inject({
      method: "POST",
      url: "/admin/api-keys",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: form.toString(),
    });
    expect(created.statusCode).toBe(303);
    const stored = await f.db
      .selectFrom("api_keys")
      .select("products")
      .where("name", "=", "dashboard pipeline")
      .executeTakeFirstOrThrow();
    expect(JSON.parse(stored.products ?? "null")).toEqual([f.otherProduct.id]);
    const page = await f.app.inject({ url: "/admin/api-keys", headers: { cookie } });
    const row = page.body.split("dashboard pipeline")[1]?.split("</tr>")[0] ?? "";
    expect(row).toMatch(new RegExp(`<td>\\s*${f.otherProduct.slug}\\s*</td>`));
    expect(page.body).toContain("limited to the product it ships");
    // A key without a list is shown as one for every product.
    expect(page.body.split(">ci<")[1]?.split("</tr>")[0]).toContain("<em>all</em>");
  });

  describe("keys making keys", () => {
    const createAs = (secret: string, body: Record<string, unknown>) =>
      callWithApiKey(f, secret, "POST", "/api/admin/api-keys", body);

    it("a limited key creates keys only within its products", async () => {
      const before = await snapshot();
      const everyProduct = await createAs(limited.key, {
        name: "wider",
        scopes: ["releases:write"],
      });
      expect(everyProduct.statusCode).toBe(403);
      expect(everyProduct.json()).toMatchObject({ code: "PRODUCT_NOT_IN_KEY" });
      const both = await createAs(limited.key, {
        name: "wider",
        scopes: ["releases:write"],
        products: [f.product.slug, f.otherProduct.slug],
      });
      expect(both.statusCode).toBe(403);
      expect(both.json()).toEqual({
        error: `This API key cannot grant product "${f.otherProduct.slug}": it is not among its products`,
        code: "PRODUCT_NOT_IN_KEY",
      });
      expect(await snapshot()).toEqual(before);

      const within = await createAs(limited.key, {
        name: "narrower",
        scopes: ["releases:write"],
        products: [f.product.slug],
      });
      expect(within.statusCode).toBe(201);
      expect(within.json()).toMatchObject({ name: "narrower", products: [f.product.slug] });
      const id = within.json<{ id: string }>().id;
      const entry = await f.db
        .selectFrom("audit_log")
        .select("details")
        .where("action", "=", "api_key.create")
        .where("target_id", "=", id)
        .executeTakeFirstOrThrow();
      expect(JSON.parse(entry.details)).toMatchObject({ products: [f.product.slug] });
      // And it may revoke it, but not an all-products key.
      const revoked = await callWithApiKey(
        f,
        limited.key,
        "POST",
        `/api/admin/api-keys/${id}/revoke`,
      );
      expect(revoked.statusCode).toBe(200);
      const notRevoked = await callWithApiKey(
        f,
        limited.key,
        "POST",
        `/api/admin/api-keys/${unlimited.id}/revoke`,
      );
      expect(notRevoked.statusCode).toBe(403);
      expect(notRevoked.json()).toMatchObject({ code: "PRODUCT_NOT_IN_KEY" });
    });

    it("products are validated: each must exist, the list must not be empty", async () => {
      const unknown = await createAs(unlimited.key, {
        name: "typo",
        scopes: ["releases:write"],
        products: [f.product.slug, "no-such-app"],
      });
      expect(unknown.statusCode).toBe(400);
      expect(unknown.json()).toEqual({
        error: 'products: no product "no-such-app"',
        code: "INVALID_FIELD_VALUE",
        field: "products[1]",
      });
      const empty = await createAs(unlimited.key, {
        name: "empty",
        scopes: ["releases:write"],
        products: [],
      });
      expect(empty.statusCode).toBe(400);
      expect(empty.json()).toMatchObject({ code: "INVALID_FIELD_VALUE" });
      expect(
        await f.db
          .selectFrom("api_keys")
          .select("id")
          .where("name", "in", ["typo", "empty"])
          .execute(),
      ).toEqual([]);
    });

    it("an unlimited key (and every key made before product lists) lists as products: null", async () => {
      const keys = await callWithApiKey(f, unlimited.key, "GET", "/api/admin/api-keys");
      const items = keys.json<{ items: Array<{ name: string; products: string[] | null }> }>()
        .items;
      expect(items.find((k) => k.name === "ci")?.products).toBeNull();
      expect(items.find((k) => k.name === "desktop pipeline")?.products).toEqual([f.product.slug]);
      // The fixture's publish key (no list) still publishes for any product.
      const published = await f.post(
        "/api/releases/publish",
        {
          productSlug: f.otherProduct.slug,
          version: "3.0.0",
          channel: "STABLE",
          releases: [
            { platform: "MACOS", arch: "ARM64", downloadUrl: "https://example.com/b.dmg" },
          ],
        },
        { authorization: `Bearer ${f.publishKey}` },
      );
      expect(published.statusCode).toBe(200);
    });
  });
});
