import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as admin from "../../src/contracts/admin.js";
import type { Contract } from "../../src/contracts/kit.js";
import * as seats from "../../src/contracts/seats.js";
import * as webhooks from "../../src/contracts/webhooks.js";
import type { ApiKeyScope } from "../../src/contracts/vocabulary.js";
import { type AdminRoute, describeAdminAuth } from "../helpers/admin-auth-cases.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

const isContract = (value: unknown): value is Contract =>
  typeof value === "object" &&
  value !== null &&
  "operationId" in value &&
  "schema" in value &&
  "url" in value;

/** Every admin API route, from its contract: none can be left out of the auth cases. */
const adminContracts = [admin, seats, webhooks]
  .flatMap((module) => Object.values(module))
  .filter(isContract)
  .filter((c) => c.url.startsWith("/api/admin/"));

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
