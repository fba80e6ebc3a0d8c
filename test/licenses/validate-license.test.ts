import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { updateLicense } from "../../src/domain/licenses/manage-licenses.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

describe.each(dialects)("POST /api/license/validate (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => {
    await f.close();
  });

  const validate = (body: unknown) => f.post("/api/license/validate", body);
  const activate = (licenseKey: string, machineId: string) =>
    f.post("/api/license/activate", { licenseKey, machineId, productSlug: f.product.slug });

  describe("spec section 7, Validate: one test per row", () => {
    const rows: Array<{
      row: string;
      status: number;
      expected: Record<string, unknown>;
      body: () => Promise<Record<string, unknown>>;
    }> = [
      {
        row: "400 Missing required fields",
        status: 400,
        expected: {
          error: "Missing required fields",
          code: "MISSING_REQUIRED_FIELDS",
          fields: ["productSlug"],
        },
        body: async () => ({ licenseKey: "k", machineId: "m" }),
      },
      {
        row: "404 Invalid license key",
        status: 404,
        expected: { error: "Invalid license key", code: "LICENSE_NOT_FOUND" },
        body: async () => ({ licenseKey: "missing", machineId: "m", productSlug: f.product.slug }),
      },
      {
        row: "403 License is suspended/revoked",
        status: 403,
        expected: { error: "License is suspended/revoked", code: "LICENSE_NOT_ACTIVE" },
        body: async () => ({
          licenseKey: await f.createLicense({ status: "REVOKED" }),
          machineId: "m",
          productSlug: f.product.slug,
        }),
      },
      {
        row: "403 License has expired",
        status: 403,
        expected: { error: "License has expired", code: "LICENSE_EXPIRED" },
        body: async () => ({
          licenseKey: await f.createLicense({ expiresAt: Date.now() - 1 }),
          machineId: "m",
          productSlug: f.product.slug,
        }),
      },
      {
        row: "403 License is not valid for this product",
        status: 403,
        expected: {
          error: "License is not valid for this product",
          code: "LICENSE_PRODUCT_MISMATCH",
        },
        body: async () => ({
          licenseKey: await f.createLicense(),
          machineId: "m",
          productSlug: f.otherProduct.slug,
        }),
      },
      {
        row: "403 Machine not activated, canActivate true when slots are available",
        status: 403,
        expected: {
          error: "Machine not activated",
          code: "MACHINE_NOT_ACTIVATED",
          canActivate: true,
        },
        body: async () => ({
          licenseKey: await f.createLicense({ maxMachines: 1 }),
          machineId: "never-activated",
          productSlug: f.product.slug,
        }),
      },
      {
        row: "403 Maximum machines reached",
        status: 403,
        expected: { error: "Maximum machines reached", code: "MAX_MACHINES_REACHED" },
        body: async () => {
          const licenseKey = await f.createLicense({ maxMachines: 2 });
          await activate(licenseKey, "a");
          await activate(licenseKey, "b");
          await updateLicense(f.db, licenseKey, { maxMachines: 1 });
          return { licenseKey, machineId: "a", productSlug: f.product.slug };
        },
      },
    ];

    it.each(rows)("$row", async ({ status, expected, body }) => {
      const response = await validate(await body());
      expect(response.statusCode).toBe(status);
      expect(response.headers["content-type"]).toMatch(/^application\/json/);
      expect(response.json()).toEqual({ valid: false, ...expected });
    });
  });

  describe("spec section 4.3: success", () => {
    it("returns every field of the success table for an activated machine", async () => {
      const licenseKey = await f.createLicense({
        maxMachines: 4,
        edition: "pro",
        editionName: "Professional",
        features: ["export", "sync"],
        expiresAt: Date.parse("2099-01-31T23:59:59.000Z"),
      });
      await activate(licenseKey, "m1");
      const response = await validate({ licenseKey, machineId: "m1", productSlug: f.product.slug });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({
        valid: true,
        edition: "pro",
        editionName: "Professional",
        features: ["export", "sync"],
        expiresAt: "2099-01-31T23:59:59.000Z",
        maxMachines: 4,
        activeMachines: 1,
      });
    });

    it("unset edition, editionName and expiry are null; unset features are []", async () => {
      const licenseKey = await f.createLicense();
      await activate(licenseKey, "plain");
      const response = await validate({
        licenseKey,
        machineId: "plain",
        productSlug: f.product.slug,
      });
      expect(response.json()).toMatchObject({
        edition: null,
        editionName: null,
        features: [],
        expiresAt: null,
      });
    });

    it("updates the machine's last-seen timestamp (written at the next flush), which no response returns", async () => {
      const licenseKey = await f.createLicense();
      await activate(licenseKey, "tick");
      await f.db
        .updateTable("activations")
        .set({ last_seen_at: 0 })
        .where("machine_id", "=", "tick")
        .execute();
      const response = await validate({
        licenseKey,
        machineId: "tick",
        productSlug: f.product.slug,
      });
      expect(JSON.stringify(response.json())).not.toMatch(/seen/i);
      await f.app.lastSeen.flush(f.db);
      const row = await f.db
        .selectFrom("activations")
        .select("last_seen_at")
        .where("machine_id", "=", "tick")
        .executeTakeFirstOrThrow();
      expect(row.last_seen_at).toBeGreaterThan(Date.now() - 60_000);
    });
  });

  describe("decisions", () => {
    it("canActivate is false when no slot is available", async () => {
      const licenseKey = await f.createLicense({ maxMachines: 1 });
      await activate(licenseKey, "holder");
      const response = await validate({
        licenseKey,
        machineId: "outsider",
        productSlug: f.product.slug,
      });
      expect(response.json()).toEqual({
        valid: false,
        error: "Machine not activated",
        code: "MACHINE_NOT_ACTIVATED",
        canActivate: false,
      });
    });

    it("a deactivated machine is not activated", async () => {
      const licenseKey = await f.createLicense();
      await activate(licenseKey, "gone");
      await f.post("/api/license/deactivate", { licenseKey, machineId: "gone" });
      const response = await validate({
        licenseKey,
        machineId: "gone",
        productSlug: f.product.slug,
      });
      expect(response.json().error).toBe("Machine not activated");
      expect(response.json().canActivate).toBe(true);
    });

    it("over its limit, an unactivated machine is 'Machine not activated' with canActivate false", async () => {
      const licenseKey = await f.createLicense({ maxMachines: 2 });
      await activate(licenseKey, "a");
      await activate(licenseKey, "b");
      await updateLicense(f.db, licenseKey, { maxMachines: 1 });
      const response = await validate({ licenseKey, machineId: "c", productSlug: f.product.slug });
      expect(response.json()).toMatchObject({ error: "Machine not activated", canActivate: false });
    });

    it("a refused validate does not touch last-seen", async () => {
      const licenseKey = await f.createLicense({ maxMachines: 2 });
      await activate(licenseKey, "x1");
      await activate(licenseKey, "x2");
      await updateLicense(f.db, licenseKey, { maxMachines: 1 });
      await f.db
        .updateTable("activations")
        .set({ last_seen_at: 5 })
        .where("machine_id", "=", "x1")
        .execute();
      await validate({ licenseKey, machineId: "x1", productSlug: f.product.slug });
      await f.app.lastSeen.flush(f.db);
      const row = await f.db
        .selectFrom("activations")
        .select("last_seen_at")
        .where("machine_id", "=", "x1")
        .executeTakeFirstOrThrow();
      expect(row.last_seen_at).toBe(5);
    });

    it("a license change is seen by the very next request", async () => {
      const licenseKey = await f.createLicense();
      await activate(licenseKey, "live");
      const body = { licenseKey, machineId: "live", productSlug: f.product.slug };
      expect((await validate(body)).statusCode).toBe(200);
      await updateLicense(f.db, licenseKey, { status: "SUSPENDED" });
      expect((await validate(body)).json().error).toBe("License is suspended/revoked");
      await updateLicense(f.db, licenseKey, { status: "ACTIVE", expiresAt: Date.now() - 1 });
      expect((await validate(body)).json().error).toBe("License has expired");
      await updateLicense(f.db, licenseKey, { expiresAt: null });
      expect((await validate(body)).statusCode).toBe(200);
    });

    it("machineId of the wrong type is a 400 naming it", async () => {
      const response = await validate({ licenseKey: "k", machineId: 12, productSlug: "p" });
      expect(response.json()).toEqual({
        valid: false,
        error: "machineId must be a string",
        code: "INVALID_FIELD_TYPE",
        field: "machineId",
      });
    });

    it("machineId over 255 characters on a usable license is a 400", async () => {
      const licenseKey = await f.createLicense();
      const response = await validate({
        licenseKey,
        machineId: "m".repeat(256),
        productSlug: f.product.slug,
      });
      expect(response.statusCode).toBe(400);
      expect(response.json().code).toBe("FIELD_TOO_LONG");
    });
  });
});
