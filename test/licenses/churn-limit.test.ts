import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commands } from "../../src/cli/commands.js";
import { prune } from "../../src/domain/maintenance/prune.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { commandContext } from "../helpers/cli.js";

const day = 86_400_000;
const refusal =
  '{"error":"Deactivation limit reached","code":"DEACTIVATION_LIMIT_REACHED","success":false}';

describe.each(dialects)("churn limit: public deactivations per 30 days (%s)", (dialect) => {
  let f: Fixture;
  let apiKey: string;
  let cookie: string;
  let csrf: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ apiKey, cookie, csrf } = await adminAccess(f, "churn@example.com"));
  });
  afterAll(async () => {
    await f.close();
  });

  const activate = (licenseKey: string, machineId: string, productSlug = f.product.slug) =>
    f.post("/api/license/activate", { licenseKey, machineId, productSlug });
  const deactivate = (licenseKey: string, machineId: string) =>
    f.post("/api/license/deactivate", { licenseKey, machineId });
  const api = (method: "PATCH" | "POST" | "DELETE", url: string, body?: unknown) =>
    callWithApiKey(f, apiKey, method, url, body);
  const setProductLimit = async (slug: string, maxDeactivationsPer30Days: number | null) =>
    expect(
      (await api("PATCH", `/api/admin/products/${slug}`, { maxDeactivationsPer30Days })).statusCode,
    ).toBe(200);
  /** A license of the other product (its limit is set per test), with machines active on it. */
  const licenseWith = async (machines: number, limit: number | null = null) => {
    const answer = await api("POST", "/api/admin/licenses", {
      productSlug: f.otherProduct.slug,
      maxMachines: 100,
      maxDeactivationsPer30Days: limit,
    });
    expect(answer.statusCode).toBe(201);
    const { licenseKey } = answer.json<{ licenseKey: string }>();
    for (let i = 0; i < machines; i++) {
      expect((await activate(licenseKey, `m-${i}`, f.otherProduct.slug)).statusCode).toBe(200);
    }
    return licenseKey;
  };
  const endedBy = async (licenseKey: string) =>
    (
      await f.db
        .selectFrom("activations")
        .innerJoin("licenses", "licenses.id", "activations.license_id")
        .select(["activations.machine_id", "activations.deactivated_by"])
        .where("licenses.license_key", "=", licenseKey)
        .where("activations.deactivated_at", "is not", null)
        .orderBy("activations.machine_id")
        .execute()
    ).map((row) => `${row.machine_id}:${row.deactivated_by}`);

  it("off by default: every deactivation goes through, recorded as the client's", async () => {
    const licenseKey = await f.createLicense({ maxMachines: 1 });
    for (let i = 0; i < 5; i++) {
      await activate(licenseKey, "m");
      expect((await deactivate(licenseKey, "m")).json()).toEqual({
        success: true,
        message: "Machine deactivated",
        machineId: "m",
      });
    }
    expect(await endedBy(licenseKey)).toEqual(Array(5).fill("m:client"));
  });

  describe("with a limit", () => {
    beforeAll(async () => setProductLimit(f.otherProduct.slug, 2));
    afterAll(async () => setProductLimit(f.otherProduct.slug, null));

    it("the product's limit: the third deactivation in 30 days is refused and changes nothing", async () => {
      const licenseKey = await licenseWith(3);
      expect((await deactivate(licenseKey, "m-0")).statusCode).toBe(200);
      expect((await deactivate(licenseKey, "m-1")).statusCode).toBe(200);
      const refused = await deactivate(licenseKey, "m-2");
      expect(refused.statusCode).toBe(403);
      expect(refused.body).toBe(refusal);
      // Still active, its slot still used.
      const validated = await f.post("/api/license/validate", {
        licenseKey,
        machineId: "m-2",
        productSlug: f.otherProduct.slug,
      });
      expect(validated.json()).toMatchObject({ valid: true, activeMachines: 1 });
    });

    it.each([
      ["the license's own limit overrides the product's", 4, 4],
      ["a license limit of 0 refuses every client deactivation", 0, 0],
      ["a license without its own limit inherits the product's", null, 2],
    ])("%s", async (_name, own, allowed) => {
      const licenseKey = await licenseWith(6, own);
      const statuses = [];
      for (let i = 0; i < 6; i++)
        statuses.push((await deactivate(licenseKey, `m-${i}`)).statusCode);
      expect(statuses).toEqual([...Array(allowed).fill(200), ...Array(6 - allowed).fill(403)]);
    });

    it("check order: unknown key 404, machine not active 404, both before the limit", async () => {
      const licenseKey = await licenseWith(3, 1);
      expect((await deactivate(licenseKey, "m-0")).statusCode).toBe(200);
      const rows: Array<[string, string, number, string]> = [
        ["NO-SUCH-LICENSE-KEY", "m-1", 404, "LICENSE_NOT_FOUND"],
        [licenseKey, "never-activated", 404, "ACTIVATION_NOT_FOUND"],
        [licenseKey, "m-0", 404, "ACTIVATION_NOT_FOUND"],
        [licenseKey, "m-1", 403, "DEACTIVATION_LIMIT_REACHED"],
      ];
      for (const [key, machine, status, code] of rows) {
        const answer = await deactivate(key, machine);
        expect([answer.statusCode, answer.json<{ code: string }>().code]).toEqual([status, code]);
      }
    });

    it("administrators are never limited, and their deactivations do not count", async () => {
      const licenseKey = await licenseWith(6, 1);
      for (const machine of ["m-0", "m-1", "m-2"]) {
        const removed = await api(
          "DELETE",
          `/api/admin/licenses/${licenseKey}/machines/${machine}`,
        );
        expect(removed.statusCode).toBe(200);
      }
      expect((await deactivate(licenseKey, "m-3")).statusCode).toBe(200);
      expect((await deactivate(licenseKey, "m-4")).body).toBe(refusal);
      expect(await endedBy(licenseKey)).toEqual([
        "m-0:admin",
        "m-1:admin",
        "m-2:admin",
        "m-3:client",
      ]);
    });

    it("only the trailing 30 days count", async () => {
      const licenseKey = await licenseWith(4);
      await deactivate(licenseKey, "m-0");
      await deactivate(licenseKey, "m-1");
      expect((await deactivate(licenseKey, "m-2")).statusCode).toBe(403);
      await f.db
        .updateTable("activations")
        .set({ deactivated_at: Date.now() - 30 * day - 1000 })
        .where("machine_id", "=", "m-0")
        .where("deactivated_at", "is not", null)
        .where("license_id", "=", (eb) =>
          eb.selectFrom("licenses").select("id").where("license_key", "=", licenseKey),
        )
        .execute();
      expect((await deactivate(licenseKey, "m-2")).statusCode).toBe(200);
      expect((await deactivate(licenseKey, "m-3")).statusCode).toBe(403);
    });

    it("exact under 20 concurrent deactivations of 20 machines against a limit of 3", async () => {
      const licenseKey = await licenseWith(20, 3);
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => deactivate(licenseKey, `m-${i}`)),
      );
      expect(answers.filter((a) => a.statusCode === 200)).toHaveLength(3);
      for (const answer of answers.filter((a) => a.statusCode !== 200)) {
        expect(answer.body).toBe(refusal);
      }
      const license = await f.db
        .selectFrom("licenses")
        .select("active_machines")
        .where("license_key", "=", licenseKey)
        .executeTakeFirstOrThrow();
      expect(license.active_machines).toBe(17);
      expect(await endedBy(licenseKey)).toHaveLength(3);
    });

    it("pruning keeps a limited license's client deactivations for 30 days, whatever the retention", async () => {
      const limited = await licenseWith(3);
      const unlimited = await f.createLicense({ maxMachines: 3 });
      for (const machine of ["m-0", "m-1"]) {
        await activate(unlimited, machine);
        await deactivate(unlimited, machine);
      }
      await deactivate(limited, "m-0");
      await api("DELETE", `/api/admin/licenses/${limited}/machines/m-1`);
      await deactivate(limited, "m-2");
      await f.db
        .updateTable("activations")
        .set({ deactivated_at: Date.now() - 31 * day })
        .where("machine_id", "=", "m-2")
        .where("deactivated_by", "=", "client")
        .execute();
      await prune(f.db, { activationHistoryMs: 0 });
      expect(await endedBy(limited)).toEqual(["m-0:client"]);
      expect(await endedBy(unlimited)).toEqual([]);
    });
  });

  it("settings: admin API (checked, audited), CLI and dashboard", async () => {
    const slug = f.product.slug;
    for (const bad of [-1, 10_001, 2.5, "3"]) {
      const answer = await api("PATCH", `/api/admin/products/${slug}`, {
        maxDeactivationsPer30Days: bad,
      });
      expect(answer.statusCode).toBe(400);
    }
    const patched = await api("PATCH", `/api/admin/products/${slug}`, {
      maxDeactivationsPer30Days: 5,
      offlineAllowance: 2,
    });
    expect(patched.json()).toMatchObject({ maxDeactivationsPer30Days: 5, offlineAllowance: 2 });
    expect(
      (
        await api("PATCH", `/api/admin/products/${slug}`, { maxDeactivationsPer30Days: null })
      ).json(),
    ).toMatchObject({ maxDeactivationsPer30Days: null });
    const created = await api("POST", "/api/admin/licenses", {
      productSlug: slug,
      maxMachines: 1,
      maxDeactivationsPer30Days: 7,
    });
    const { licenseKey } = created.json<{ licenseKey: string }>();
    expect(created.json()).toMatchObject({ maxDeactivationsPer30Days: 7 });
    const updated = await api("PATCH", `/api/admin/licenses/${licenseKey}`, {
      maxDeactivationsPer30Days: null,
    });
    expect(updated.json()).toMatchObject({ maxDeactivationsPer30Days: null });
    expect(
      (await api("PATCH", `/api/admin/licenses/${licenseKey}`, { maxDeactivationsPer30Days: -2 }))
        .statusCode,
    ).toBe(400);
    const license = await f.db
      .selectFrom("licenses")
      .select("id")
      .where("license_key", "=", licenseKey)
      .executeTakeFirstOrThrow();
    const audit = await f.db
      .selectFrom("audit_log")
      .select(["action", "target_id", "details"])
      .where((eb) => eb.or([eb("target_id", "=", slug), eb("target_id", "=", license.id)]))
      .where("action", "in", ["product.deactivation_limit", "license.create", "license.update"])
      .orderBy("at")
      .orderBy("id")
      .execute();
    expect(audit.map((e) => [e.action, JSON.parse(String(e.details))])).toEqual([
      ["product.deactivation_limit", { maxDeactivationsPer30Days: 5 }],
      ["product.deactivation_limit", { maxDeactivationsPer30Days: null }],
      [
        "license.create",
        {
          licenseKey: `…${licenseKey.slice(-4)}`,
          product: slug,
          maxMachines: 1,
          status: "ACTIVE",
          maxDeactivationsPer30Days: 7,
        },
      ],
      [
        "license.update",
        {
          licenseKey: `…${licenseKey.slice(-4)}`,
          changed: ["maxDeactivationsPer30Days"],
          changes: { maxDeactivationsPer30Days: { from: 7, to: null } },
        },
      ],
    ]);

    const setLimit = commands["products set-deactivation-limit"];
    expect(
      (await setLimit?.run(f.db, [slug], { "per-30-days": "4" }, commandContext()))?.data,
    ).toMatchObject({
      maxDeactivationsPer30Days: 4,
    });
    expect(
      (await setLimit?.run(f.db, [slug], { "per-30-days": "none" }, commandContext()))?.data,
    ).toMatchObject({
      maxDeactivationsPer30Days: null,
    });
    const cliLicense = await commands["licenses update"]?.run(
      f.db,
      [licenseKey],
      {
        "max-deactivations-per-30-days": "9",
      },
      commandContext(),
    );
    expect(cliLicense?.data).toMatchObject({ maxDeactivationsPer30Days: 9 });
    const inherit = await commands["licenses update"]?.run(
      f.db,
      [licenseKey],
      {
        "max-deactivations-per-30-days": "product",
      },
      commandContext(),
    );
    expect(inherit?.data).toMatchObject({ maxDeactivationsPer30Days: null });

    const form = (url: string, fields: Record<string, string>) =>
      f.app.inject({
        method: "POST",
        url,
        headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString(),
      });
    const keysPage = `/admin/products/${slug}/keys`;
    const page = await f.app.inject({ url: keysPage, headers: { cookie } });
    expect(page.body).toContain("Recommended where apps use certificates");
    expect(
      (await form(`${keysPage}/deactivation-limit`, { maxDeactivationsPer30Days: "x" })).statusCode,
    ).toBe(400);
    expect(
      (await form(`${keysPage}/deactivation-limit`, { maxDeactivationsPer30Days: "3" })).statusCode,
    ).toBe(303);
    expect(
      (
        await f.db
          .selectFrom("products")
          .select("max_deactivations_per_30_days")
          .where("slug", "=", slug)
          .executeTakeFirstOrThrow()
      ).max_deactivations_per_30_days,
    ).toBe(3);
    expect(
      (await form(`${keysPage}/deactivation-limit`, { maxDeactivationsPer30Days: "" })).statusCode,
    ).toBe(303);
    const detail = await f.app.inject({
      url: `/admin/licenses/${licenseKey}`,
      headers: { cookie },
    });
    expect(detail.body).toContain('name="maxDeactivationsPer30Days"');
    const edited = await form(`/admin/licenses/${licenseKey}/edit`, {
      maxMachines: "1",
      maxDeactivationsPer30Days: "6",
    });
    expect(edited.statusCode).toBe(303);
    expect(
      (await api("PATCH", `/api/admin/licenses/${licenseKey}`, { note: "n" })).json(),
    ).toMatchObject({ maxDeactivationsPer30Days: 6 });
  });
});
