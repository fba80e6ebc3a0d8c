import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiKeyScopes } from "../../src/contracts/vocabulary.js";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

// Every admin write refuses a field its contract does not define (400 UNKNOWN_FIELD), naming it
// and the known field it is close to; so does a query string. The license endpoints accept
// unknown fields: apps in the field send newer ones.
describe.each(dialects)("unknown fields (%s)", (dialect) => {
  let f: Fixture;
  let apiKey: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    apiKey = (await createApiKey(f.db, { name: "all", scopes: [...apiKeyScopes] })).key;
  });
  afterAll(async () => {
    await f.close();
  });

  const admin = (method: "POST" | "PATCH" | "GET", url: string, body?: unknown) =>
    f.app.inject({
      method,
      url,
      headers: {
        authorization: `Bearer ${apiKey}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  const licenseCount = async () =>
    Number(
      (
        await f.db
          .selectFrom("licenses")
          .select((eb) => eb.fn.countAll().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );

  describe("admin writes", () => {
    it.each([
      [
        "beside the field meant",
        { productSlug: "desktop-app", maxMachines: 1, maxMachine: 2 },
        "maxMachine: did you mean maxMachines?",
      ],
      [
        "in place of a required field",
        { productSlug: "desktop-app", maxMachine: 2 },
        "maxMachine: did you mean maxMachines?",
      ],
      [
        "a synonym",
        { product: "desktop-app", maxMachines: 1 },
        "product: did you mean productSlug?",
      ],
    ])(
      "POST /api/admin/licenses with an unknown field %s: 400, nothing written",
      async (_c, body, said) => {
        const before = await licenseCount();
        const response = await admin("POST", "/api/admin/licenses", body);
        expect(response.statusCode).toBe(400);
        const field = said.split(":")[0];
        expect(response.json()).toEqual({
          error: `Unknown field ${said}`,
          code: "UNKNOWN_FIELD",
          field,
        });
        expect(await licenseCount()).toBe(before);
      },
    );

    it("a field close to no known field is named without a suggestion", async () => {
      const response = await admin("POST", "/api/admin/products", {
        slug: "a",
        name: "A",
        colour: "red",
      });
      expect(response.json()).toEqual({
        error: "Unknown field colour",
        code: "UNKNOWN_FIELD",
        field: "colour",
      });
    });

    it.each([
      ["POST", "/api/admin/api-keys", { name: "n", scopes: ["audit:read"], scope: 1 }, "scopes"],
      ["PATCH", "/api/admin/products/desktop-app", { nmae: "X" }, "name"],
      ["POST", "/api/admin/webhook-endpoints", { URL: "https://h.example/", events: [] }, "url"],
    ] as const)("%s %s suggests the field meant", async (method, url, body, meant) => {
      const response = await admin(method, url, body);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ code: "UNKNOWN_FIELD" });
      expect(response.json().error).toMatch(new RegExp(`: did you mean ${meant}\\?$`));
    });

    it("a write that takes no body refuses one holding a field, and changes nothing", async () => {
      const key = await f.createLicense();
      const response = await admin("POST", `/api/admin/licenses/${key}/suspend`, {
        reason: "fraud",
      });
      expect(response.json()).toEqual({
        error: "Unknown field reason",
        code: "UNKNOWN_FIELD",
        field: "reason",
      });
      expect((await admin("GET", `/api/admin/licenses/${key}`)).json().status).toBe("ACTIVE");
      const empty = await admin("POST", `/api/admin/licenses/${key}/suspend`, {});
      expect(empty.statusCode).toBe(200);
    });

    it("an unknown query parameter is named, with the one meant", async () => {
      const response = await admin("GET", "/api/admin/licenses?Status=ACTIVE");
      expect(response.json()).toEqual({
        error: "Unknown query parameter Status: did you mean status?",
        code: "UNKNOWN_FIELD",
        field: "Status",
      });
    });
  });

  describe("the license endpoints accept unknown fields", () => {
    it("activate, validate, checkout and deactivate answer 200 with a field they do not know", async () => {
      const body = {
        licenseKey: await f.createLicense(),
        machineId: "m-1",
        productSlug: f.product.slug,
      };
      const extra = { notes: "x", newerField: { nested: true } };
      for (const path of ["activate", "validate", "checkout", "deactivate"]) {
        const response = await f.post(`/api/license/${path}`, { ...body, ...extra });
        expect(response.statusCode, path).toBe(200);
      }
    });
  });
});
