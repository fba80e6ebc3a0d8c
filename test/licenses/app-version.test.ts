import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryStorage, ShipkeyClient } from "../../packages/client/src/index.js";
import { createLicense } from "../../src/domain/licenses/manage-licenses.js";
import { usageReport } from "../../src/domain/releases/usage-report.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

/**
 * The app's version the SDK reports (appVersion) with activate, validate and checkout: stored per
 * machine (validate's through the last-seen flush), counted per version on the dashboard and in
 * the usage report, and never a reason for a different answer.
 */
describe.each(dialects)("app versions per machine (%s)", (dialect) => {
  let f: Fixture;
  let cookie: string;
  let apiKey: string;
  beforeAll(async () => {
    // Flushed by the tests only, so that what validate buffered is seen before and after a flush.
    f = await createFixture(dialect, { bufferFlushMs: 3_600_000 });
    ({ cookie, apiKey } = await adminAccess(f, "versions@example.com"));
  });
  afterAll(async () => {
    await f?.close();
  });

  const versionOf = async (licenseKey: string, machineId: string) =>
    (
      await f.db
        .selectFrom("activations as a")
        .innerJoin("licenses as l", "l.id", "a.license_id")
        .select("a.app_version")
        .where("l.license_key", "=", licenseKey)
        .where("a.machine_id", "=", machineId)
        .where("a.deactivated_at", "is", null)
        .executeTakeFirstOrThrow()
    ).app_version;

  const flush = () => f.app.lastSeen.flush(f.db);

  /** A new license with the machines activated on it (without a version). */
  async function licenseWith(...machineIds: string[]): Promise<string> {
    const licenseKey = await f.createLicense({ maxMachines: 5 });
    for (const machineId of machineIds) {
      const activated = await f.post("/api/license/activate", {
        licenseKey,
        machineId,
        productSlug: f.product.slug,
      });
      expect(activated.statusCode).toBe(200);
    }
    return licenseKey;
  }

  it("the SDK's appVersion is stored at the flush; the dashboard counts the machine on it", async () => {
    const licenseKey = await licenseWith("plain-machine");
    await f.app.listen({ port: 0, host: "127.0.0.1" });
    const address = f.app.server.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    const server = `http://127.0.0.1:${address.port}`;
    const keys = await (await fetch(`${server}/api/products/${f.product.slug}/keys`)).json();
    const sdk = (appVersion: string) =>
      new ShipkeyClient({
        server,
        productSlug: f.product.slug,
        publicKeys: keys as { keys: [] },
        storage: new MemoryStorage(),
        machineId: "sdk-machine",
        retry: { attempts: 1 },
        appVersion,
      });
    await sdk("v2.4.0").activate(licenseKey);
    // Activate writes at once (a leading "v" stripped); validate's waits for the flush.
    expect(await versionOf(licenseKey, "sdk-machine")).toBe("2.4.0");
    const client = sdk("2.5.0-beta.1");
    await client.activate(licenseKey);
    await f.db
      .updateTable("activations")
      .set({ app_version: "2.4.0" })
      .where("machine_id", "=", "sdk-machine")
      .execute();
    expect(await client.validate()).toMatchObject({ valid: true, offline: false });
    expect(await versionOf(licenseKey, "sdk-machine")).toBe("2.4.0");
    await flush();
    expect(await versionOf(licenseKey, "sdk-machine")).toBe("2.5.0-beta.1");

    const report = await usageReport(f.db, f.product.slug, 30);
    expect(report.machinesByVersion).toEqual(
      expect.arrayContaining([{ version: "2.5.0-beta.1", machines: 1 }]),
    );
    const page = async (url: string) => {
      const response = await f.app.inject({ method: "GET", url, headers: { cookie } });
      expect(response.statusCode).toBe(200);
      const section = /<section class="panel" id="versions-in-use">[\s\S]*?<\/section>/.exec(
        response.body,
      );
      return (section?.[0] ?? "").replace(/\s+/g, " ");
    };
    for (const url of [
      `/admin?product=${f.product.slug}`,
      `/admin/releases?product=${f.product.slug}`,
    ]) {
      const section = await page(url);
      expect(section).toContain("<td>2.5.0-beta.1</td> <td>1</td>");
      expect(section).toMatch(/<span class="muted">unknown<\/span><\/td> <td>\d+<\/td>/);
      expect(section).toContain("machines whose app has not reported a version");
      expect(section).toContain("last reported with activate, validate or checkout");
    }
    expect(() => sdk("2.5")).toThrow(TypeError);
    expect(() => sdk(`1.0.0-${"a".repeat(130)}`)).toThrow(TypeError);
  });

  it("machines that never reported a version count as unknown; deactivated ones not at all", async () => {
    const other = await createFixture(dialect);
    try {
      const licenseKey = await other.createLicense({ maxMachines: 5 });
      const body = (machineId: string, extra: object = {}) => ({
        licenseKey,
        machineId,
        productSlug: other.product.slug,
        ...extra,
      });
      await other.post("/api/license/activate", body("a", { appVersion: "1.0.0" }));
      await other.post("/api/license/activate", body("b", { appVersion: "1.0.0" }));
      await other.post("/api/license/activate", body("c"));
      await other.post("/api/license/activate", body("d", { appVersion: "0.9.0" }));
      await other.post("/api/license/deactivate", body("d"));
      const report = await usageReport(other.db, other.product.slug, 30);
      expect(report.machinesByVersion).toEqual([
        { version: "1.0.0", machines: 2 },
        { version: null, machines: 1 },
      ]);
      const { apiKey } = await adminAccess(other, "usage@example.com");
      const api = await callWithApiKey(
        other,
        apiKey,
        "GET",
        `/api/admin/products/${other.product.slug}/usage`,
      );
      expect(api.statusCode).toBe(200);
      expect(api.json<{ machinesByVersion: unknown }>().machinesByVersion).toEqual(
        report.machinesByVersion,
      );
    } finally {
      await other.close();
    }
  });

  /** Values the server ignores: the answer is byte for byte the one without the field. */
  const ignored: unknown[] = [
    "1.0",
    "not a version",
    `1.0.0-${"x".repeat(200)}`,
    // Within the body limit (64 KiB), far beyond appVersion's.
    "9".repeat(60_000),
    "1.0.0\u0000",
    " 1.0.0",
    "",
    null,
    42,
    true,
    ["1.0.0"],
    { version: "1.0.0" },
  ];

  it("a malformed appVersion is ignored: same status and body as without it, nothing stored", async () => {
    const licenseKey = await licenseWith("m-1");
    const base = { licenseKey, machineId: "m-1", productSlug: f.product.slug };
    await f.post("/api/license/validate", { ...base, appVersion: "1.2.3" });
    await flush();
    for (const appVersion of ignored) {
      for (const path of ["/api/license/validate", "/api/license/activate"]) {
        const without = await f.post(path, base);
        const withField = await f.post(path, { ...base, appVersion });
        expect(withField.statusCode).toBe(200);
        expect(withField.body.replace(/"activatedAt":"[^"]+"/, "")).toBe(
          without.body.replace(/"activatedAt":"[^"]+"/, ""),
        );
      }
    }
    await flush();
    expect(await versionOf(licenseKey, "m-1")).toBe("1.2.3");
  });

  it("the spec's refusals keep their order and bytes with any appVersion", async () => {
    const licenseKey = await licenseWith("m-1");
    const requests = [
      {},
      { licenseKey },
      { licenseKey: "NO-SUCH-KEY", machineId: "m-1", productSlug: f.product.slug },
      { licenseKey, machineId: "m-1", productSlug: f.otherProduct.slug },
      { licenseKey, machineId: "never-activated", productSlug: f.product.slug },
    ];
    for (const body of requests) {
      for (const path of ["/api/license/validate", "/api/license/activate"]) {
        if (path.endsWith("activate") && "machineId" in body && body.machineId !== "m-1") continue;
        const without = await f.post(path, body);
        expect(without.statusCode).toBeGreaterThanOrEqual(400);
        for (const appVersion of ["1.0.0", ...ignored]) {
          const withField = await f.post(path, { ...body, appVersion });
          expect(withField.statusCode).toBe(without.statusCode);
          expect(withField.body).toBe(without.body);
        }
      }
    }
  });

  it("activate and checkout store it too; a request without one keeps the stored version", async () => {
    const licenseKey = await licenseWith();
    const base = { licenseKey, machineId: "m-2", productSlug: f.product.slug };
    await f.post("/api/license/activate", { ...base, appVersion: "3.0.0" });
    expect(await versionOf(licenseKey, "m-2")).toBe("3.0.0");
    await f.post("/api/license/activate", base);
    expect(await versionOf(licenseKey, "m-2")).toBe("3.0.0");
    await f.post("/api/license/activate", { ...base, appVersion: "3.0.1" });
    expect(await versionOf(licenseKey, "m-2")).toBe("3.0.1");
    const checkout = await f.post("/api/license/checkout", { ...base, appVersion: "3.1.0" });
    expect(checkout.statusCode).toBe(200);
    await flush();
    expect(await versionOf(licenseKey, "m-2")).toBe("3.1.0");
    await f.post("/api/license/validate", base);
    await flush();
    expect(await versionOf(licenseKey, "m-2")).toBe("3.1.0");

    // The license's machines show it: the admin API and the dashboard's license page.
    const path = `/api/admin/licenses/${encodeURIComponent(licenseKey)}/machines`;
    const listed = await callWithApiKey(f, apiKey, "GET", path);
    expect(listed.statusCode).toBe(200);
    expect(listed.json<{ items: unknown[] }>().items).toEqual([
      expect.objectContaining({ machineId: "m-2", appVersion: "3.1.0" }),
    ]);
    const page = await f.app.inject({
      method: "GET",
      url: `/admin/licenses/${encodeURIComponent(licenseKey)}`,
      headers: { cookie },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body.replace(/\s+/g, " ")).toMatch(/<td>3\.1\.0<\/td> <td>/);
  });

  it("the overview shows its ten versions with the most machines, then the rest summed up", async () => {
    const { licenseKey } = await createLicense(f.db, {
      productSlug: f.otherProduct.slug,
      maxMachines: 20,
    });
    for (let i = 0; i < 11; i++) {
      const activated = await f.post("/api/license/activate", {
        licenseKey,
        machineId: `versioned-${i}`,
        productSlug: f.otherProduct.slug,
        appVersion: `1.0.${i}`,
      });
      expect(activated.statusCode).toBe(200);
    }
    const page = await f.app.inject({
      method: "GET",
      url: `/admin?product=${f.otherProduct.slug}`,
      headers: { cookie },
    });
    expect(page.statusCode).toBe(200);
    const body = page.body.replace(/\s+/g, " ");
    expect(body).toContain("<td>1.0.10</td> <td>1</td>");
    expect(body).toContain('<td class="muted">1 other version</td> <td>1</td>');
  });
});
