import { describe, expect, it } from "vitest";
import { createApiKey, revokeApiKey } from "../../src/domain/api-keys/api-keys.js";
import type { Fixture } from "./fixture.js";
import { type ApiKeyScope, apiKeyScopes } from "../../src/contracts/vocabulary.js";

export interface AdminRoute {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  url: string;
  scope: ApiKeyScope;
  body?: unknown;
}

/**
 * The shared authentication cases, generated for every admin route so none can forget one:
 * no key, unknown key, revoked key, expired key (401) and a key without the route's scope (403),
 * all in the service's failure shape.
 */
export function describeAdminAuth(fixture: () => Fixture, routes: AdminRoute[]): void {
  describe.each(routes)("$method $url requires $scope", (route) => {
    const send = (authorization?: string) =>
      fixture().app.inject({
        method: route.method,
        url: route.url,
        headers: {
          ...(authorization === undefined ? {} : { authorization }),
          ...(route.body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(route.body === undefined ? {} : { payload: JSON.stringify(route.body) }),
      });
    const unauthorized = { error: "Invalid or missing API key", code: "INVALID_API_KEY" };

    it("no key: 401", async () => {
      const response = await send();
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual(unauthorized);
    });

    it("unknown key: 401", async () => {
      const response = await send("Bearer shk_unknown");
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual(unauthorized);
    });

    it("revoked key: 401", async () => {
      const f = fixture();
      const key = await createApiKey(f.db, { name: "revoked", scopes: [route.scope] });
      await revokeApiKey(f.db, key.id);
      expect((await send(`Bearer ${key.key}`)).statusCode).toBe(401);
    });

    it("expired key: 401", async () => {
      const f = fixture();
      const key = await createApiKey(f.db, {
        name: "expired",
        scopes: [route.scope],
        expiresAt: Date.now() - 1,
      });
      expect((await send(`Bearer ${key.key}`)).statusCode).toBe(401);
    });

    it("every other scope but this one: 403", async () => {
      const f = fixture();
      const others = apiKeyScopes.filter((s) => s !== route.scope);
      const key = await createApiKey(f.db, { name: "wrong scope", scopes: [...others] });
      const response = await send(`Bearer ${key.key}`);
      expect(response.statusCode).toBe(403);
      expect(response.json()).toEqual({ error: "Missing required scope", code: "MISSING_SCOPE" });
    });
  });
}
