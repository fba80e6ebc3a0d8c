import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { apiKeyScopes } from "../../src/contracts/vocabulary.js";

// Every admin validation error names the field at fault, including a field the route does not
// know. Validation does not touch the database: SQLite covers it.
describe("admin API validation messages", () => {
  let f: Fixture;
  let apiKey: string;
  beforeAll(async () => {
    f = await createFixture("sqlite");
    apiKey = (await createApiKey(f.db, { name: "all", scopes: [...apiKeyScopes] })).key;
  });
  afterAll(async () => {
    await f.close();
  });

  const post = (url: string, body: unknown) =>
    f.app.inject({
      method: "POST",
      url,
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      payload: JSON.stringify(body),
    });

  it.each([
    [
      "/api/admin/licenses",
      { productSlug: "desktop-app", maxMachines: 1, maxMachine: 2 },
      "Unknown field maxMachine: did you mean maxMachines?",
    ],
    ["/api/admin/licenses", { productSlug: "desktop-app", maxMachines: "1" }, "body/maxMachines"],
    [
      "/api/admin/licenses",
      { productSlug: "desktop-app" },
      "body must have required property 'maxMachines'",
    ],
    [
      "/api/admin/api-keys",
      { name: "n", scopes: ["audit:read"], scope: 1 },
      "Unknown field scope: did you mean scopes?",
    ],
    ["/api/admin/api-keys", { name: 5, scopes: ["audit:read"] }, "body/name must be string"],
    ["/api/admin/api-keys", { name: "n" }, "body must have required property 'scopes'"],
    ["/api/admin/products", { slug: "a", name: "A", colour: "red" }, "Unknown field colour"],
  ])("POST %s %j names the field", async (url, body, message) => {
    const response = await post(url, body);
    expect(response.statusCode).toBe(400);
    expect(response.json().code).toBe(
      message.startsWith("Unknown") ? "UNKNOWN_FIELD" : "INVALID_FIELD_VALUE",
    );
    expect(response.json().error).toContain(message);
  });

  it("an unknown query parameter is named", async () => {
    const response = await f.app.inject({
      method: "GET",
      url: "/api/admin/licenses?colour=red",
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toBe("Unknown query parameter colour");
  });
});
