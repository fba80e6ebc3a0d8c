import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiKeyScope } from "../../src/contracts/vocabulary.js";
import { type AdminRoute, describeAdminAuth } from "../helpers/admin-auth-cases.js";
import { contracts } from "../helpers/contracts.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

/** Every admin API route, from its contract: none can be left out of the auth cases. */
const adminContracts = contracts.filter((c) => c.url.startsWith("/api/admin/"));

const routes: AdminRoute[] = adminContracts.map((c) => ({
  method: c.method as AdminRoute["method"],
  // Any value stands in for a path parameter: the key is checked before the route reads it.
  url: c.url.replace(/:[A-Za-z]+/g, "x"),
  scope: c.auth as ApiKeyScope,
}));

describe("admin API authentication, generated for every route of the contracts", () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture("sqlite");
  });
  afterAll(async () => {
    await f.close();
  });

  it("covers every admin route (the contracts are every operation of the OpenAPI document)", () => {
    expect(routes.length).toBeGreaterThanOrEqual(46);
    for (const c of adminContracts) expect(c.auth, c.operationId).not.toBe("public");
  });

  describeAdminAuth(() => f, routes);
});
