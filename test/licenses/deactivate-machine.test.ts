import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LicenseSettings, updateLicense } from "../../src/domain/licenses/manage-licenses.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

describe.each(dialects)("POST /api/license/deactivate (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => {
    await f.close();
  });

  const deactivate = (body: unknown) => f.post("/api/license/deactivate", body);
  const activate = (licenseKey: string, machineId: string) =>
    f.post("/api/license/activate", { licenseKey, machineId, productSlug: f.product.slug });

  describe("spec section 7, Deactivate: one test per row", () => {
    const rows: Array<{
      row: string;
      status: number;
      error: string;
      code: string;
      fields?: string[];
      body: () => Promise<Record<string, unknown>>;
    }> = [
      {
        row: "400 Missing required fields: licenseKey or machineId missing",
        status: 400,
        error: "Missing required fields",
        code: "MISSING_REQUIRED_FIELDS",
        fields: ["machineId"],
        body: async () => ({ licenseKey: "k" }),
      },
      {
        row: "404 Invalid license key: key does not exist",
        status: 404,
        error: "Invalid license key",
        code: "LICENSE_NOT_FOUND",
        body: async () => ({ licenseKey: "unknown", machineId: "m" }),
      },
      {
        row: "404 Machine is not activated: no active activation for this machine",
        status: 404,
        error: "Machine is not activated",
        code: "ACTIVATION_NOT_FOUND",
        body: async () => ({ licenseKey: await f.createLicense(), machineId: "never" }),
      },
    ];

    it.each(rows)("$row", async ({ status, error, code, fields, body }) => {
      const response = await deactivate(await body());
      expect(response.statusCode).toBe(status);
      expect(response.headers["content-type"]).toMatch(/^application\/json/);
      expect(response.json()).toEqual({ success: false, error, code, ...(fields && { fields }) });
    });
  });

  describe("spec section 4.4: success", () => {
    it("deactivates the machine and frees its slot", async () => {
      const licenseKey = await f.createLicense({ maxMachines: 1 });
      await activate(licenseKey, "old-pc");
      const response = await deactivate({ licenseKey, machineId: "old-pc" });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({
        success: true,
        message: "Machine deactivated",
        machineId: "old-pc",
      });
      const next = await activate(licenseKey, "new-pc");
      expect(next.json()).toMatchObject({
        message: "Machine activated",
        activeMachines: 1,
        maxMachines: 1,
      });
    });

    it("a second deactivation of the same machine is 404 Machine is not activated", async () => {
      const licenseKey = await f.createLicense();
      await activate(licenseKey, "twice");
      await deactivate({ licenseKey, machineId: "twice" });
      const response = await deactivate({ licenseKey, machineId: "twice" });
      expect(response.statusCode).toBe(404);
      expect(response.json().error).toBe("Machine is not activated");
    });
  });

  describe("decisions", () => {
    it.each([
      ["SUSPENDED", { status: "SUSPENDED" }],
      ["REVOKED", { status: "REVOKED" }],
      ["expired", { expiresAt: 1 }],
    ] satisfies Array<[string, LicenseSettings]>)(
      "works on a %s license: a customer can always free a slot",
      async (_label, change) => {
        const licenseKey = await f.createLicense();
        await activate(licenseKey, "stuck");
        await updateLicense(f.db, licenseKey, change);
        const response = await deactivate({ licenseKey, machineId: "stuck" });
        expect(response.statusCode).toBe(200);
        const license = await f.db
          .selectFrom("licenses")
          .select("active_machines")
          .where("license_key", "=", licenseKey)
          .executeTakeFirstOrThrow();
        expect(license.active_machines).toBe(0);
      },
    );

    it("ignores a productSlug if one is sent, even a wrong one", async () => {
      const licenseKey = await f.createLicense();
      await activate(licenseKey, "p");
      const response = await deactivate({ licenseKey, machineId: "p", productSlug: "whatever" });
      expect(response.statusCode).toBe(200);
    });

    it("keeps the activation as history with its deactivation time", async () => {
      const licenseKey = await f.createLicense();
      await activate(licenseKey, "hist");
      await deactivate({ licenseKey, machineId: "hist" });
      const rows = await f.db
        .selectFrom("activations")
        .select("deactivated_at")
        .where("machine_id", "=", "hist")
        .execute();
      expect(rows).toHaveLength(1);
      expect(rows[0]?.deactivated_at).toBeGreaterThan(0);
    });

    it("licenseKey of the wrong type is a 400 naming it", async () => {
      const response = await deactivate({ licenseKey: 1, machineId: "m" });
      expect(response.json()).toEqual({
        success: false,
        error: "licenseKey must be a string",
        code: "INVALID_FIELD_TYPE",
        field: "licenseKey",
      });
    });
  });
});
