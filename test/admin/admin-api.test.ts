import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdmin, createSession, deleteSession } from "../../src/domain/admins/admins.js";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import { type Actor, withAudit } from "../../src/domain/audit/audit-log.js";
import { createProduct } from "../../src/domain/products/products.js";
import { callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import type { AdminRoute } from "../helpers/admin-auth-cases.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { apiKeyScopes } from "../../src/contracts/vocabulary.js";

describe.each(dialects)("admin API (%s)", (dialect) => {
  let f: Fixture;
  let admin: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    admin = (await createApiKey(f.db, { name: "automation", scopes: [...apiKeyScopes] })).key;
  });
  afterAll(async () => {
    await f.close();
  });

  const call = (method: AdminRoute["method"], url: string, body?: unknown) =>
    callWithApiKey(f, admin, method, url, body);

  describe("products", () => {
    it("create, get, list, rename, delete", async () => {
      const created = await call("POST", "/api/admin/products", {
        slug: "cli-tool",
        name: "CLI Tool",
      });
      expect(created.statusCode).toBe(201);
      expect(created.json()).toMatchObject({ slug: "cli-tool", name: "CLI Tool" });
      expect((await call("GET", "/api/admin/products/cli-tool")).json().name).toBe("CLI Tool");
      expect(
        (await call("GET", "/api/admin/products"))
          .json()
          .items.map((p: { slug: string }) => p.slug),
      ).toContain("cli-tool");
      expect(
        (await call("PATCH", "/api/admin/products/cli-tool", { name: "CLI Tool 2" })).json().name,
      ).toBe("CLI Tool 2");
      expect((await call("DELETE", "/api/admin/products/cli-tool")).json()).toEqual({
        deleted: true,
        slug: "cli-tool",
      });
      expect((await call("GET", "/api/admin/products/cli-tool")).statusCode).toBe(404);
    });

    it("delete is refused with 409 while licenses or releases reference the product", async () => {
      await call("POST", "/api/admin/products", { slug: "in-use", name: "In use" });
      await call("POST", "/api/admin/licenses", { productSlug: "in-use", maxMachines: 1 });
      const response = await call("DELETE", "/api/admin/products/in-use");
      expect(response.statusCode).toBe(409);
      expect(response.json().code).toBe("PRODUCT_IN_USE");
    });

    it.each([
      [{ slug: "x" }, "body must have required property 'name'"],
      [{ slug: "Bad Slug", name: "n" }, "slug must be lowercase letters"],
      [{ slug: "ok", name: "n", extra: 1 }, "Unknown field extra"],
      [{ slug: 5, name: "n" }, "body/slug must be string"],
    ])("invalid body %j is a 400", async (body, message) => {
      const response = await call("POST", "/api/admin/products", body);
      expect(response.statusCode).toBe(400);
      expect(response.json().error).toContain(message);
    });

    it("a duplicate slug is 409", async () => {
      const response = await call("POST", "/api/admin/products", {
        slug: "desktop-app",
        name: "Again",
      });
      expect(response.statusCode).toBe(409);
      expect(response.json().code).toBe("PRODUCT_SLUG_TAKEN");
    });
  });

  describe("licenses", () => {
    it("create with every field, get with machines and history, update, suspend/revoke/reinstate", async () => {
      const created = await call("POST", "/api/admin/licenses", {
        productSlug: "desktop-app",
        maxMachines: 2,
        licenseKey: "ADMIN-LICENSE-0001",
        expiresAt: "2030-06-01T00:00:00Z",
        edition: "pro",
        editionName: "Professional",
        features: ["sync"],
        customerName: "Ada Lovelace",
        customerEmail: "ada@example.com",
        note: "Paid via invoice 42",
      });
      expect(created.statusCode).toBe(201);
      expect(created.json()).toMatchObject({
        licenseKey: "ADMIN-LICENSE-0001",
        product: "desktop-app",
        expiresAt: "2030-06-01T00:00:00.000Z",
        customerName: "Ada Lovelace",
        customerEmail: "ada@example.com",
        note: "Paid via invoice 42",
      });

      await f.post("/api/license/activate", {
        licenseKey: "ADMIN-LICENSE-0001",
        machineId: "pc-1",
        productSlug: "desktop-app",
      });
      await f.post("/api/license/activate", {
        licenseKey: "ADMIN-LICENSE-0001",
        machineId: "pc-2",
        productSlug: "desktop-app",
      });
      await f.post("/api/license/deactivate", {
        licenseKey: "ADMIN-LICENSE-0001",
        machineId: "pc-2",
      });
      const detail = (await call("GET", "/api/admin/licenses/ADMIN-LICENSE-0001")).json();
      expect(detail.machines).toEqual([
        expect.objectContaining({ machineId: "pc-1", lastSeenAt: expect.stringMatching(/Z$/) }),
      ]);
      expect(detail.pastActivations).toEqual([
        expect.objectContaining({ machineId: "pc-2", deactivatedAt: expect.stringMatching(/Z$/) }),
      ]);

      expect(
        (
          await call("PATCH", "/api/admin/licenses/ADMIN-LICENSE-0001", {
            maxMachines: 5,
            expiresAt: null,
          })
        ).json(),
      ).toMatchObject({
        maxMachines: 5,
        expiresAt: null,
      });
      expect(
        (await call("POST", "/api/admin/licenses/ADMIN-LICENSE-0001/suspend")).json().status,
      ).toBe("SUSPENDED");
      expect(
        (
          await f.post("/api/license/validate", {
            licenseKey: "ADMIN-LICENSE-0001",
            machineId: "pc-1",
            productSlug: "desktop-app",
          })
        ).json().error,
      ).toBe("License is suspended/revoked");
      expect(
        (await call("POST", "/api/admin/licenses/ADMIN-LICENSE-0001/revoke")).json().status,
      ).toBe("REVOKED");
      expect(
        (await call("POST", "/api/admin/licenses/ADMIN-LICENSE-0001/reinstate")).json().status,
      ).toBe("ACTIVE");
    });

    it("force-deactivating a machine frees its slot; validate then says 'Machine not activated'", async () => {
      await call("POST", "/api/admin/licenses", {
        productSlug: "desktop-app",
        maxMachines: 1,
        licenseKey: "ADMIN-LICENSE-0002",
      });
      await f.post("/api/license/activate", {
        licenseKey: "ADMIN-LICENSE-0002",
        machineId: "stolen",
        productSlug: "desktop-app",
      });
      const response = await call(
        "DELETE",
        "/api/admin/licenses/ADMIN-LICENSE-0002/machines/stolen",
      );
      expect(response.json()).toEqual({
        deactivated: true,
        licenseKey: "ADMIN-LICENSE-0002",
        machineId: "stolen",
      });
      const validate = await f.post("/api/license/validate", {
        licenseKey: "ADMIN-LICENSE-0002",
        machineId: "stolen",
        productSlug: "desktop-app",
      });
      expect(validate.json()).toMatchObject({ error: "Machine not activated", canActivate: true });
      const machines = (
        await call("GET", "/api/admin/licenses/ADMIN-LICENSE-0002/machines")
      ).json();
      expect(machines.items).toEqual([]);
      expect(machines.past).toHaveLength(1);
    });

    it("lists with filters and cursor pagination", async () => {
      for (let i = 0; i < 5; i++) {
        await call("POST", "/api/admin/licenses", {
          productSlug: "other-app",
          maxMachines: 1,
          licenseKey: `PAGE-LICENSE-000${i}`,
          customerEmail: `buyer${i}@shop.example`,
          ...(i === 0 ? { status: "SUSPENDED" } : {}),
          ...(i === 1 ? { expiresAt: "2001-01-01T00:00:00Z" } : {}),
        });
      }
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const query: string = `/api/admin/licenses?product=other-app&limit=2${cursor ? `&cursor=${cursor}` : ""}`;
        const page = (await call("GET", query)).json();
        expect(page.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.items.map((l: { licenseKey: string }) => l.licenseKey));
        cursor = page.nextCursor;
      } while (cursor);
      expect(seen.sort()).toEqual([
        "PAGE-LICENSE-0000",
        "PAGE-LICENSE-0001",
        "PAGE-LICENSE-0002",
        "PAGE-LICENSE-0003",
        "PAGE-LICENSE-0004",
      ]);

      const keys = async (query: string) =>
        (await call("GET", `/api/admin/licenses?product=other-app&${query}`))
          .json()
          .items.map((l: { licenseKey: string }) => l.licenseKey)
          .sort();
      expect(await keys("status=SUSPENDED")).toEqual(["PAGE-LICENSE-0000"]);
      expect(await keys("expired=true")).toEqual(["PAGE-LICENSE-0001"]);
      expect(await keys("expired=false")).toEqual([
        "PAGE-LICENSE-0000",
        "PAGE-LICENSE-0002",
        "PAGE-LICENSE-0003",
        "PAGE-LICENSE-0004",
      ]);
      expect(await keys("q=page-license-0003")).toEqual(["PAGE-LICENSE-0003"]);
      expect(await keys("q=BUYER4%40")).toEqual(["PAGE-LICENSE-0004"]);
      expect(await keys("q=%25")).toEqual([]);
    });

    it.each([
      ["/api/admin/licenses?limit=0", "querystring/limit must match pattern"],
      [
        "/api/admin/licenses?status=active",
        "querystring/status must be equal to one of the allowed values",
      ],
      ["/api/admin/licenses?cursor=nonsense", "cursor is not valid"],
      ["/api/admin/licenses?bogus=1", "Unknown query parameter bogus"],
    ])("GET %s is a 400", async (url, message) => {
      const response = await call("GET", url);
      expect(response.statusCode).toBe(400);
      expect(response.json().error).toContain(message);
    });

    it.each([
      [{ productSlug: "desktop-app" }, "must have required property 'maxMachines'"],
      [{ productSlug: "desktop-app", maxMachines: "2" }, "body/maxMachines must be integer"],
      [{ productSlug: "desktop-app", maxMachines: -1 }, "body/maxMachines must be >= 0"],
      [
        { productSlug: "desktop-app", maxMachines: 1, expiresAt: "soon" },
        "expiresAt must be an ISO 8601 timestamp",
      ],
      [
        { productSlug: "desktop-app", maxMachines: 1, customerEmail: "nope" },
        "customerEmail must be an email address",
      ],
      [{ productSlug: "nope", maxMachines: 1 }, "Product not found"],
    ])("create with %j is refused", async (body, message) => {
      const response = await call("POST", "/api/admin/licenses", body);
      expect(response.statusCode).toBeGreaterThanOrEqual(400);
      expect(response.statusCode).toBeLessThan(500);
      expect(response.json().error).toContain(message);
    });

    it("an unknown license is 404 on get, update and force-deactivate", async () => {
      expect((await call("GET", "/api/admin/licenses/NOPE")).statusCode).toBe(404);
      expect((await call("PATCH", "/api/admin/licenses/NOPE", { maxMachines: 1 })).statusCode).toBe(
        404,
      );
      expect((await call("DELETE", "/api/admin/licenses/NOPE/machines/m")).statusCode).toBe(404);
    });
  });

  describe("releases", () => {
    it("lists per product grouped by version; deletes one entry, then the version", async () => {
      const publish = (version: string, releases: unknown[]) =>
        f.post(
          "/api/releases/publish",
          { productSlug: "desktop-app", version, channel: "BETA", releaseNotes: "n", releases },
          {
            authorization: `Bearer ${f.publishKey}`,
          },
        );
      await publish("3.0.0", [
        { platform: "LINUX", arch: "X64", downloadUrl: "https://x.example.com/l" },
        { platform: "MACOS", arch: "ARM64", downloadUrl: "https://x.example.com/m", fileSize: 5 },
      ]);
      const list = (await call("GET", "/api/admin/products/desktop-app/releases")).json();
      const v3 = list.items.find((v: { version: string }) => v.version === "3.0.0");
      expect(v3).toMatchObject({ channel: "BETA", releaseNotes: "n" });
      expect(
        v3.entries.map((e: { platform: string; arch: string }) => `${e.platform}/${e.arch}`),
      ).toEqual(["LINUX/X64", "MACOS/ARM64"]);

      expect(
        (await call("DELETE", "/api/admin/products/desktop-app/releases/3.0.0/LINUX/X64"))
          .statusCode,
      ).toBe(200);
      expect(
        (await call("DELETE", "/api/admin/products/desktop-app/releases/3.0.0/LINUX/X64"))
          .statusCode,
      ).toBe(404);
      expect(
        (await call("DELETE", "/api/admin/products/desktop-app/releases/3.0.0")).statusCode,
      ).toBe(200);
      const after = (await call("GET", "/api/admin/products/desktop-app/releases")).json();
      expect(after.items.map((v: { version: string }) => v.version)).not.toContain("3.0.0");
    });

    it("an invalid platform in the path is a 400", async () => {
      expect(
        (await call("DELETE", "/api/admin/products/desktop-app/releases/1.0.0/BEOS/X64"))
          .statusCode,
      ).toBe(400);
    });
  });

  describe("audit atomicity", () => {
    it("a write and its audit entry commit together: if the entry cannot be written, the write is undone", async () => {
      const impossibleActor = { type: "nobody" as Actor["type"], id: null, label: "x", ip: null };
      const write = withAudit(
        f.db,
        impossibleActor,
        "product.create",
        (trx) => createProduct(trx, { slug: "never-stored", name: "Never" }),
        (p) => ({ target: { type: "product", id: p.slug } }),
      );
      await expect(write).rejects.toThrow();
      expect((await call("GET", "/api/admin/products/never-stored")).statusCode).toBe(404);
    });
  });

  describe("more validation errors", () => {
    it.each([
      [
        "PATCH",
        "/api/admin/products/desktop-app",
        { name: "" },
        "body/name must NOT have fewer than 1 characters",
      ],
      ["PATCH", "/api/admin/licenses/K-1", {}, "body must NOT have fewer than 1 properties"],
      [
        "PATCH",
        "/api/admin/licenses/K-1",
        { status: "active" },
        "body/status must be equal to one of the allowed values",
      ],
      [
        "POST",
        "/api/admin/api-keys",
        { name: "k", scopes: ["audit:read"], expiresAt: "tomorrow" },
        "expiresAt must be an ISO 8601",
      ],
      [
        "POST",
        "/api/admin/api-keys",
        { name: "k", scopes: [] },
        "body/scopes must NOT have fewer than 1 items",
      ],
      ["GET", "/api/admin/audit?limit=5000", undefined, "querystring/limit must match pattern"],
    ] as const)("%s %s with %j is a 400", async (method, url, body, message) => {
      const response = await call(method, url, body);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ code: "INVALID_FIELD_VALUE" });
      expect(response.json().error).toContain(message);
    });

    it.each([
      ["POST", "/api/admin/products", { slug: "nul-app", name: "A\u0000B" }, "name"],
      ["GET", "/api/admin/licenses?search=A%00B", undefined, "search"],
      ["GET", "/api/admin/licenses/K%001/machines", undefined, "licenseKey"],
    ] as const)(
      "%s %s with a NUL character is a 400 and changes nothing",
      async (method, url, body, field) => {
        const response = await call(method, url, body);
        expect(response.statusCode).toBe(400);
        expect(response.json()).toEqual({
          error: "The request contains a NUL character",
          code: "INVALID_FIELD_VALUE",
          field,
        });
        expect((await call("GET", "/api/admin/products/nul-app")).statusCode).toBe(404);
      },
    );
  });

  describe("admin API through a dashboard session", () => {
    it("reads with the session cookie; writes need the session's CSRF token in X-CSRF-Token", async () => {
      const admin = await createAdmin(f.db, {
        email: `ops-${dialect}@example.com`,
        password: "a long enough password",
      });
      const session = await createSession(f.db, admin.id);
      const cookie = `shipkey_session=${session.token}`;
      const read = await f.app.inject({
        method: "GET",
        url: "/api/admin/products",
        headers: { cookie },
      });
      expect(read.statusCode).toBe(200);

      const body = JSON.stringify({ slug: "via-session", name: "Via session" });
      const headers = { cookie, "content-type": "application/json" };
      const withoutToken = await f.app.inject({
        method: "POST",
        url: "/api/admin/products",
        headers,
        payload: body,
      });
      expect(withoutToken.statusCode).toBe(403);
      expect(withoutToken.json()).toEqual({
        error: "X-CSRF-Token header missing or wrong",
        code: "CSRF_TOKEN_INVALID",
      });
      const wrongToken = await f.app.inject({
        method: "POST",
        url: "/api/admin/products",
        headers: { ...headers, "x-csrf-token": "nope" },
        payload: body,
      });
      expect(wrongToken.statusCode).toBe(403);
      const withToken = await f.app.inject({
        method: "POST",
        url: "/api/admin/products",
        headers: { ...headers, "x-csrf-token": session.csrfToken },
        payload: body,
      });
      expect(withToken.statusCode).toBe(201);

      const audit = (await call("GET", "/api/admin/audit")).json().items as Array<{
        action: string;
        actor: { type: string; label: string };
      }>;
      expect(audit.find((e) => e.action === "product.create")).toMatchObject({
        actor: { type: "admin", label: `ops-${dialect}@example.com` },
      });
    });

    it("an expired or deleted session is not accepted", async () => {
      const admin = await createAdmin(f.db, {
        email: `gone-${dialect}@example.com`,
        password: "a long enough password",
      });
      const expired = await createSession(f.db, admin.id, Date.now() - 13 * 60 * 60 * 1000);
      const response = await f.app.inject({
        method: "GET",
        url: "/api/admin/products",
        headers: { cookie: `shipkey_session=${expired.token}` },
      });
      expect(response.statusCode).toBe(401);
      const live = await createSession(f.db, admin.id);
      await deleteSession(f.db, live.token);
      const after = await f.app.inject({
        method: "GET",
        url: "/api/admin/products",
        headers: { cookie: `shipkey_session=${live.token}` },
      });
      expect(after.statusCode).toBe(401);
    });
  });

  describe("API keys and the audit log", () => {
    it("creates a key (secret once), lists it without the secret, revokes it; every write is audited without secrets", async () => {
      const created = await call("POST", "/api/admin/api-keys", {
        name: "payment webhook",
        scopes: ["licenses:write"],
        expiresAt: "2031-01-01T00:00:00Z",
      });
      expect(created.statusCode).toBe(201);
      const key = created.json();
      expect(key).toMatchObject({
        name: "payment webhook",
        scopes: ["licenses:write"],
        expiresAt: "2031-01-01T00:00:00.000Z",
      });
      expect(key.key).toMatch(/^shk_/);

      const list = await call("GET", "/api/admin/api-keys");
      expect(list.body).not.toContain(key.key);
      expect(list.json().items).toEqual(
        expect.arrayContaining([expect.objectContaining({ id: key.id, revokedAt: null })]),
      );

      // The new key works for its scope, and its writes are attributed to it.
      const issued = await f.app.inject({
        method: "POST",
        url: "/api/admin/licenses",
        headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
        payload: JSON.stringify({
          productSlug: "desktop-app",
          maxMachines: 1,
          licenseKey: "WEBHOOK-LICENSE-0001",
        }),
      });
      expect(issued.statusCode).toBe(201);

      expect((await call("POST", `/api/admin/api-keys/${key.id}/revoke`)).json().revokedAt).toMatch(
        /Z$/,
      );

      const audit = await call("GET", "/api/admin/audit?limit=200");
      expect(audit.body).not.toContain(key.key);
      const entries = audit.json().items as Array<{
        action: string;
        actor: { label: string };
        target: { id: string };
        details: Record<string, unknown>;
        ip: string | null;
      }>;
      // Licenses are named by id and a masked key: the log holds no license key.
      expect(audit.body).not.toContain("WEBHOOK-LICENSE-0001");
      expect(
        entries.find((e) => e.action === "license.create" && e.details.licenseKey === "…0001"),
      ).toMatchObject({
        actor: { type: "api_key", id: key.id, label: "payment webhook" },
        ip: expect.any(String),
      });
      expect(entries.map((e) => e.action)).toEqual(
        expect.arrayContaining(["api_key.create", "api_key.revoke"]),
      );
    });

    it("unknown scopes are refused", async () => {
      const response = await call("POST", "/api/admin/api-keys", { name: "x", scopes: ["root"] });
      expect(response.statusCode).toBe(400);
    });
  });
});
