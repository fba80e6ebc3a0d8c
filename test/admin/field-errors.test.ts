import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiKeyScopes } from "../../src/contracts/vocabulary.js";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

// A failure about one field names it in `field` (a path: `features[1]`,
// `releases[0].downloadUrl`); "Missing required fields" lists every missing one in `fields`.
// The spec's `error` text and the `code` stay as they are.
describe.each(dialects)("failure bodies name the field at fault (%s)", (dialect) => {
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

  describe("spec endpoints", () => {
    it("activate without licenseKey and productSlug lists both, in the check's order", async () => {
      const response = await f.post("/api/license/activate", { machineId: "m-1" });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        success: false,
        error: "Missing required fields",
        code: "MISSING_REQUIRED_FIELDS",
        fields: ["licenseKey", "productSlug"],
      });
    });

    it("an empty string and null count as missing too", async () => {
      const response = await f.post("/api/license/checkout", {
        licenseKey: "",
        machineId: null,
        productSlug: f.product.slug,
      });
      expect(response.json()).toMatchObject({
        code: "MISSING_REQUIRED_FIELDS",
        fields: ["licenseKey", "machineId"],
      });
    });

    it("validate with machineId of the wrong type names machineId", async () => {
      const response = await f.post("/api/license/validate", {
        licenseKey: "k",
        machineId: 12,
        productSlug: f.product.slug,
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        valid: false,
        error: "machineId must be a string",
        code: "INVALID_FIELD_TYPE",
        field: "machineId",
      });
    });

    it("a machineName over 255 characters names machineName", async () => {
      const licenseKey = await f.createLicense();
      const response = await f.post("/api/license/activate", {
        licenseKey,
        machineId: "m-long-name",
        productSlug: f.product.slug,
        machineName: "n".repeat(256),
      });
      expect(response.json()).toEqual({
        success: false,
        error: "machineName must be at most 255 characters",
        code: "FIELD_TOO_LONG",
        field: "machineName",
      });
    });

    it("a publish with a download URL over the limit names releases[1].downloadUrl", async () => {
      const entry = (platform: string, downloadUrl: string) => ({
        platform,
        arch: "X64",
        downloadUrl,
      });
      const response = await f.post(
        "/api/releases/publish",
        {
          productSlug: f.product.slug,
          version: "1.0.0",
          channel: "STABLE",
          releases: [
            entry("WINDOWS", "https://downloads.example.com/app.exe"),
            entry("LINUX", `https://downloads.example.com/${"a".repeat(2048)}.AppImage`),
          ],
        },
        { authorization: `Bearer ${f.publishKey}` },
      );
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        error: "releases[1].downloadUrl must be at most 2048 characters",
        code: "FIELD_TOO_LONG",
        field: "releases[1].downloadUrl",
      });
    });

    it("the latest feed without platform and arch lists both", async () => {
      const response = await f.app.inject({
        method: "GET",
        url: `/api/updates/${f.product.slug}/latest`,
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        error: "Missing required fields",
        code: "MISSING_REQUIRED_FIELDS",
        fields: ["platform", "arch"],
      });
    });
  });

  describe("admin routes (JSON Schema validation)", () => {
    it.each([
      ["an extra property", { slug: "a", name: "A", colour: "red" }, "UNKNOWN_FIELD", "colour"],
      ["a missing property", { slug: "a" }, "INVALID_FIELD_VALUE", "name"],
      ["a property of the wrong type", { slug: "a", name: 5 }, "INVALID_FIELD_VALUE", "name"],
    ])("%s on POST /api/admin/products is named", async (_label, body, code, field) => {
      const response = await admin("POST", "/api/admin/products", body);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ code, field });
    });

    it("an element of a list is named by its index", async () => {
      const response = await admin("POST", "/api/admin/licenses", {
        productSlug: f.product.slug,
        maxMachines: 1,
        features: ["sync", "x".repeat(256)],
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({
        code: "INVALID_FIELD_VALUE",
        field: "features[1]",
      });
    });

    it("an unknown query parameter is named", async () => {
      const response = await admin("GET", "/api/admin/licenses?colour=red");
      expect(response.json()).toEqual({
        error: "Unknown query parameter colour",
        code: "UNKNOWN_FIELD",
        field: "colour",
      });
    });

    it("a domain refusal of one field names it (a slug that is not a slug)", async () => {
      const response = await admin("POST", "/api/admin/products", {
        slug: "Not A Slug",
        name: "A",
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ code: "INVALID_FIELD_VALUE", field: "slug" });
    });

    it("a slug already taken names slug", async () => {
      const response = await admin("POST", "/api/admin/products", {
        slug: f.product.slug,
        name: "Again",
      });
      expect(response.statusCode).toBe(409);
      expect(response.json()).toMatchObject({ code: "PRODUCT_SLUG_TAKEN", field: "slug" });
    });

    it("a refusal about no one field carries neither field nor fields", async () => {
      const response = await admin("GET", "/api/admin/products/no-such-product");
      expect(response.statusCode).toBe(404);
      expect(Object.keys(response.json())).toEqual(["error", "code"]);
    });
  });
});
