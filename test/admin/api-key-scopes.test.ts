import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdmin, createSession } from "../../src/domain/admins/admins.js";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import { callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { apiKeyScopes } from "../../src/contracts/vocabulary.js";

const day = 24 * 60 * 60 * 1000;

describe.each(dialects)("API keys cannot escalate their scopes (%s)", (dialect) => {
  let f: Fixture;
  let session: { cookie: string; csrf: string };
  beforeAll(async () => {
    f = await createFixture(dialect);
    const admin = await createAdmin(f.db, {
      email: "scopes@example.com",
      password: "a long enough password",
    });
    const created = await createSession(f.db, admin.id);
    session = { cookie: `shipkey_session=${created.token}`, csrf: created.csrfToken };
  });
  afterAll(async () => {
    await f.close();
  });

  const asKey = (secret: string, method: "GET" | "POST", url: string, body?: unknown) =>
    callWithApiKey(f, secret, method, url, body);

  const asAdmin = (url: string, body?: unknown) =>
    f.app.inject({
      method: "POST",
      url,
      headers: {
        cookie: session.cookie,
        "x-csrf-token": session.csrf,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });

  const keyWith = (scopes: string[], expiresAt: number | null = null) =>
    createApiKey(f.db, { name: `holder of ${scopes.join(" ")}`, scopes, expiresAt });

  const storedKeyNamed = (name: string) =>
    f.db.selectFrom("api_keys").select("id").where("name", "=", name).executeTakeFirst();

  describe("creating", () => {
    it("a key holding only api-keys:write cannot create a key with every scope (the escalation)", async () => {
      const holder = await keyWith(["api-keys:write"]);
      const response = await asKey(holder.key, "POST", "/api/admin/api-keys", {
        name: "escalated",
        scopes: [...apiKeyScopes],
      });
      expect(response.statusCode).toBe(403);
      expect(response.json()).toEqual({
        error:
          "This API key cannot grant scopes it does not hold: releases:write, releases:read, " +
          "products:read, products:write, licenses:read, licenses:write, audit:read, webhooks:write",
        code: "SCOPE_NOT_HELD",
      });
      expect(await storedKeyNamed("escalated")).toBeUndefined();
      // Nor is the refused attempt recorded as a creation.
      const entries = await f.db
        .selectFrom("audit_log")
        .select("action")
        .where("actor_id", "=", holder.id)
        .execute();
      expect(entries).toEqual([]);
    });

    it("names only the scopes not held", async () => {
      const holder = await keyWith(["api-keys:write", "releases:write"]);
      const response = await asKey(holder.key, "POST", "/api/admin/api-keys", {
        name: "partly",
        scopes: ["releases:write", "licenses:read"],
      });
      expect(response.statusCode).toBe(403);
      expect(response.json().error).toBe(
        "This API key cannot grant scopes it does not hold: licenses:read",
      );
    });

    it("a subset of its own scopes is allowed, and the new key works", async () => {
      const holder = await keyWith(["api-keys:write", "releases:write", "products:read"]);
      const response = await asKey(holder.key, "POST", "/api/admin/api-keys", {
        name: "ci only",
        scopes: ["products:read"],
      });
      expect(response.statusCode).toBe(201);
      expect(response.json()).toMatchObject({ scopes: ["products:read"], expiresAt: null });
      const products = await asKey(response.json().key, "GET", "/api/admin/products");
      expect(products.statusCode).toBe(200);
    });

    it("a key with an expiry cannot create a key without one", async () => {
      const expiresAt = Date.now() + day;
      const holder = await keyWith(["api-keys:write", "audit:read"], expiresAt);
      const response = await asKey(holder.key, "POST", "/api/admin/api-keys", {
        name: "forever",
        scopes: ["audit:read"],
      });
      expect(response.statusCode).toBe(403);
      expect(response.json()).toEqual({
        error: `This API key expires at ${new Date(expiresAt).toISOString()}; a key it creates needs an expiresAt no later than that`,
        code: "SCOPE_NOT_HELD",
      });
      expect(await storedKeyNamed("forever")).toBeUndefined();
    });

    it("nor one expiring after it; one expiring at the same time or earlier is allowed", async () => {
      const expiresAt = Date.now() + day;
      const holder = await keyWith(["api-keys:write", "audit:read"], expiresAt);
      const create = (name: string, at: number) =>
        asKey(holder.key, "POST", "/api/admin/api-keys", {
          name,
          scopes: ["audit:read"],
          expiresAt: new Date(at).toISOString(),
        });
      const later = await create("outlives", expiresAt + 1);
      expect(later.statusCode).toBe(403);
      expect(later.json().code).toBe("SCOPE_NOT_HELD");
      expect((await create("same time", expiresAt)).statusCode).toBe(201);
      expect((await create("earlier", expiresAt - day / 2)).statusCode).toBe(201);
    });

    it("a signed-in admin may create any key, with no expiry", async () => {
      const response = await asAdmin("/api/admin/api-keys", {
        name: "admin made",
        scopes: [...apiKeyScopes],
      });
      expect(response.statusCode).toBe(201);
      expect(response.json()).toMatchObject({ scopes: [...apiKeyScopes], expiresAt: null });
    });
  });

  describe("revoking", () => {
    it("a key cannot revoke a key with scopes it does not hold", async () => {
      const holder = await keyWith(["api-keys:write"]);
      const target = await keyWith([...apiKeyScopes]);
      const response = await asKey(holder.key, "POST", `/api/admin/api-keys/${target.id}/revoke`);
      expect(response.statusCode).toBe(403);
      expect(response.json()).toEqual({
        error:
          "This API key cannot revoke a key with scopes it does not hold: releases:write, " +
          "releases:read, products:read, products:write, licenses:read, licenses:write, audit:read, " +
          "webhooks:write",
        code: "SCOPE_NOT_HELD",
      });
      const stored = await f.db
        .selectFrom("api_keys")
        .select("revoked_at")
        .where("id", "=", target.id)
        .executeTakeFirstOrThrow();
      expect(stored.revoked_at).toBeNull();
      expect((await asKey(target.key, "GET", "/api/admin/audit")).statusCode).toBe(200);
    });

    it("a key may revoke a key whose scopes it holds, itself included", async () => {
      const holder = await keyWith(["api-keys:write", "releases:write"]);
      const target = await keyWith(["releases:write"]);
      const revoked = await asKey(holder.key, "POST", `/api/admin/api-keys/${target.id}/revoke`);
      expect(revoked.statusCode).toBe(200);
      expect(revoked.json().revokedAt).toMatch(/Z$/);
      const self = await asKey(holder.key, "POST", `/api/admin/api-keys/${holder.id}/revoke`);
      expect(self.statusCode).toBe(200);
    });

    it("an unknown id is still 404", async () => {
      const holder = await keyWith(["api-keys:write"]);
      const response = await asKey(holder.key, "POST", "/api/admin/api-keys/key_nope/revoke");
      expect(response.statusCode).toBe(404);
      expect(response.json().code).toBe("API_KEY_NOT_FOUND");
    });

    it("a signed-in admin may revoke any key", async () => {
      const target = await keyWith([...apiKeyScopes]);
      const response = await asAdmin(`/api/admin/api-keys/${target.id}/revoke`);
      expect(response.statusCode).toBe(200);
      expect(response.json().revokedAt).toMatch(/Z$/);
    });
  });
});
