import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

const isoMs = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe.each(dialects)("POST /api/license/activate (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => {
    await f.close();
  });

  const activate = (body: unknown) => f.post("/api/license/activate", body);

  describe("spec section 7, Activate: one test per row", () => {
    const rows: Array<{
      row: string;
      status: number;
      error: string;
      code: string;
      fields?: string[];
      body: () => Promise<Record<string, unknown>>;
    }> = [
      {
        row: "400 Missing required fields: licenseKey, machineId or productSlug missing",
        status: 400,
        error: "Missing required fields",
        code: "MISSING_REQUIRED_FIELDS",
        fields: ["licenseKey"],
        body: async () => ({ machineId: "m-1", productSlug: f.product.slug }),
      },
      {
        row: "404 Invalid license key: key does not exist",
        status: 404,
        error: "Invalid license key",
        code: "LICENSE_NOT_FOUND",
        body: async () => ({
          licenseKey: "NO-SUCH-KEY",
          machineId: "m-1",
          productSlug: f.product.slug,
        }),
      },
      {
        row: "403 License is suspended/revoked: license status is not ACTIVE",
        status: 403,
        error: "License is suspended/revoked",
        code: "LICENSE_NOT_ACTIVE",
        body: async () => ({
          licenseKey: await f.createLicense({ status: "SUSPENDED" }),
          machineId: "m-1",
          productSlug: f.product.slug,
        }),
      },
      {
        row: "403 License has expired: expiration date has passed",
        status: 403,
        error: "License has expired",
        code: "LICENSE_EXPIRED",
        body: async () => ({
          licenseKey: await f.createLicense({ expiresAt: Date.now() - 1000 }),
          machineId: "m-1",
          productSlug: f.product.slug,
        }),
      },
      {
        row: "403 License is not valid for this product: productSlug does not match the license",
        status: 403,
        error: "License is not valid for this product",
        code: "LICENSE_PRODUCT_MISMATCH",
        body: async () => ({
          licenseKey: await f.createLicense(),
          machineId: "m-1",
          productSlug: f.otherProduct.slug,
        }),
      },
      {
        row: "403 Maximum machines reached: all machine slots in use",
        status: 403,
        error: "Maximum machines reached",
        code: "MAX_MACHINES_REACHED",
        body: async () => {
          const licenseKey = await f.createLicense({ maxMachines: 1 });
          await activate({ licenseKey, machineId: "first", productSlug: f.product.slug });
          return { licenseKey, machineId: "second", productSlug: f.product.slug };
        },
      },
    ];

    it.each(rows)("$row", async ({ status, error, code, fields, body }) => {
      const response = await activate(await body());
      expect(response.statusCode).toBe(status);
      expect(response.headers["content-type"]).toMatch(/^application\/json/);
      expect(response.json()).toEqual({ success: false, error, code, ...(fields && { fields }) });
    });
  });

  describe("spec section 4.2 rules", () => {
    it("rule 1: a new machine is activated with activation, activeMachines and maxMachines", async () => {
      const licenseKey = await f.createLicense({ maxMachines: 2 });
      const response = await activate({
        licenseKey,
        machineId: "laptop-1",
        productSlug: f.product.slug,
        machineName: "Ada's laptop",
        platform: "macOS 15",
      });
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(body).toEqual({
        success: true,
        message: "Machine activated",
        activation: {
          machineId: "laptop-1",
          machineName: "Ada's laptop",
          activatedAt: expect.any(String),
        },
        activeMachines: 1,
        maxMachines: 2,
      });
      expect(body.activation.activatedAt).toMatch(isoMs);
    });

    it("rule 1: activeMachines is the count after this activation", async () => {
      const licenseKey = await f.createLicense({ maxMachines: 3 });
      for (const [i, machineId] of ["a", "b", "c"].entries()) {
        const response = await activate({ licenseKey, machineId, productSlug: f.product.slug });
        expect(response.json().activeMachines).toBe(i + 1);
      }
    });

    it("rule 1: an unnamed machine has machineName null", async () => {
      const licenseKey = await f.createLicense();
      const response = await activate({ licenseKey, machineId: "x", productSlug: f.product.slug });
      expect(response.json().activation.machineName).toBeNull();
    });

    it("rule 2: the same machine again is 'Machine already activated' without slot counts", async () => {
      const licenseKey = await f.createLicense();
      const first = await activate({
        licenseKey,
        machineId: "m",
        productSlug: f.product.slug,
        machineName: "Old",
      });
      const again = await activate({
        licenseKey,
        machineId: "m",
        productSlug: f.product.slug,
        machineName: "New",
      });
      expect(again.statusCode).toBe(200);
      expect(again.json()).toEqual({
        success: true,
        message: "Machine already activated",
        // The stored activation: a name sent with the repeat does not overwrite it.
        activation: first.json().activation,
      });
    });

    it("rule 2: already activated wins even when the license is full", async () => {
      const licenseKey = await f.createLicense({ maxMachines: 1 });
      await activate({ licenseKey, machineId: "only", productSlug: f.product.slug });
      const again = await activate({ licenseKey, machineId: "only", productSlug: f.product.slug });
      expect(again.statusCode).toBe(200);
      expect(again.json().message).toBe("Machine already activated");
    });

    it("rule 2: activating again updates last-seen", async () => {
      const licenseKey = await f.createLicense();
      await activate({ licenseKey, machineId: "seen", productSlug: f.product.slug });
      await f.db
        .updateTable("activations")
        .set({ last_seen_at: 0 })
        .where("machine_id", "=", "seen")
        .execute();
      await activate({ licenseKey, machineId: "seen", productSlug: f.product.slug });
      const row = await f.db
        .selectFrom("activations")
        .select("last_seen_at")
        .where("machine_id", "=", "seen")
        .executeTakeFirstOrThrow();
      expect(row.last_seen_at).toBeGreaterThan(Date.now() - 60_000);
    });

    it("a license with maxMachines 0 admits no machine", async () => {
      const licenseKey = await f.createLicense({ maxMachines: 0 });
      const response = await activate({ licenseKey, machineId: "m", productSlug: f.product.slug });
      expect(response.statusCode).toBe(403);
      expect(response.json().error).toBe("Maximum machines reached");
    });

    it("a refused activation stores nothing", async () => {
      const licenseKey = await f.createLicense({ maxMachines: 0 });
      await activate({ licenseKey, machineId: "refused", productSlug: f.product.slug });
      const rows = await f.db
        .selectFrom("activations")
        .selectAll()
        .where("machine_id", "=", "refused")
        .execute();
      expect(rows).toEqual([]);
    });
  });

  describe("decisions: check order and input rules", () => {
    it("missing fields wins over an unknown license", async () => {
      const response = await activate({ licenseKey: "nope", productSlug: f.product.slug });
      expect(response.json().code).toBe("MISSING_REQUIRED_FIELDS");
    });

    it.each([
      ["null", null],
      ["empty string", ""],
    ])("a required field that is %s is missing", async (_label, value) => {
      const response = await activate({
        licenseKey: "k",
        machineId: value,
        productSlug: f.product.slug,
      });
      expect(response.statusCode).toBe(400);
      expect(response.json().error).toBe("Missing required fields");
    });

    it.each([
      ["licenseKey", 42, "licenseKey must be a string"],
      ["machineId", ["a"], "machineId must be a string"],
      ["productSlug", { a: 1 }, "productSlug must be a string"],
      ["machineName", 7, "machineName must be a string"],
      ["platform", true, "platform must be a string"],
    ])("%s of the wrong JSON type is a 400 naming the field", async (field, value, message) => {
      const body = { licenseKey: "k", machineId: "m", productSlug: f.product.slug, [field]: value };
      const response = await activate(body);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        success: false,
        error: message,
        code: "INVALID_FIELD_TYPE",
        field,
      });
    });

    it("status is checked before expiry, expiry before product", async () => {
      const suspendedExpired = await f.createLicense({ status: "REVOKED", expiresAt: 1 });
      const expiredOther = await f.createLicense({ expiresAt: 1 });
      const a = await activate({
        licenseKey: suspendedExpired,
        machineId: "m",
        productSlug: "other-app",
      });
      const b = await activate({
        licenseKey: expiredOther,
        machineId: "m",
        productSlug: "other-app",
      });
      expect(a.json().error).toBe("License is suspended/revoked");
      expect(b.json().error).toBe("License has expired");
    });

    it("product mismatch is checked before the machine's activation", async () => {
      const licenseKey = await f.createLicense();
      await activate({ licenseKey, machineId: "m", productSlug: f.product.slug });
      const response = await activate({
        licenseKey,
        machineId: "m",
        productSlug: f.otherProduct.slug,
      });
      expect(response.json().error).toBe("License is not valid for this product");
    });

    it("a license whose expiry is in the future activates", async () => {
      const licenseKey = await f.createLicense({ expiresAt: Date.now() + 60_000 });
      const response = await activate({ licenseKey, machineId: "m", productSlug: f.product.slug });
      expect(response.statusCode).toBe(200);
    });

    it("license keys are matched exactly (case-sensitive)", async () => {
      const licenseKey = await f.createLicense({ licenseKey: "Case-Sensitive-Key-1" });
      const response = await activate({
        licenseKey: licenseKey.toLowerCase(),
        machineId: "m",
        productSlug: f.product.slug,
      });
      expect(response.statusCode).toBe(404);
    });

    it.each([
      ["machineId", "m".repeat(256)],
      ["machineName", "n".repeat(256)],
      ["platform", "p".repeat(256)],
    ])("%s longer than 255 characters is a 400 and stores nothing", async (field, value) => {
      const licenseKey = await f.createLicense();
      const response = await activate({
        licenseKey,
        machineId: "m-long",
        productSlug: f.product.slug,
        [field]: value,
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        success: false,
        error: `${field} must be at most 255 characters`,
        code: "FIELD_TOO_LONG",
        field,
      });
      const count = await f.db
        .selectFrom("activations")
        .select("id")
        .where(
          "license_id",
          "in",
          f.db.selectFrom("licenses").select("id").where("license_key", "=", licenseKey),
        )
        .execute();
      expect(count).toEqual([]);
    });

    it("limits come after the spec's license checks: oversized machineId on an unknown key is 404", async () => {
      const response = await activate({
        licenseKey: "nope",
        machineId: "m".repeat(300),
        productSlug: f.product.slug,
      });
      expect(response.statusCode).toBe(404);
    });

    it("an oversized licenseKey is simply an unknown key", async () => {
      const response = await activate({
        licenseKey: "K".repeat(10_000),
        machineId: "m",
        productSlug: f.product.slug,
      });
      expect(response.statusCode).toBe(404);
      expect(response.json().error).toBe("Invalid license key");
    });

    it("unknown extra fields are ignored", async () => {
      const licenseKey = await f.createLicense();
      const response = await activate({
        licenseKey,
        machineId: "extra",
        productSlug: f.product.slug,
        foo: { bar: 1 },
      });
      expect(response.statusCode).toBe(200);
    });

    it("a machine activated again after deactivation gets a new activation; history is kept", async () => {
      const licenseKey = await f.createLicense();
      const first = await activate({ licenseKey, machineId: "again", productSlug: f.product.slug });
      await f.post("/api/license/deactivate", { licenseKey, machineId: "again" });
      const second = await activate({
        licenseKey,
        machineId: "again",
        productSlug: f.product.slug,
      });
      expect(second.json().message).toBe("Machine activated");
      expect(second.json().activeMachines).toBe(1);
      expect(first.json().activation.machineId).toBe("again");
      const rows = await f.db
        .selectFrom("activations")
        .select(["deactivated_at"])
        .where("machine_id", "=", "again")
        .execute();
      expect(rows).toHaveLength(2);
      expect(rows.filter((r) => r.deactivated_at === null)).toHaveLength(1);
    });
  });
});
