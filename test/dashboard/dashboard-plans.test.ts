import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLicenseFromPlan } from "../../src/actions/plans.js";
import { findPlan } from "../../src/domain/plans/plans.js";
import { testActor } from "../helpers/actions.js";
import { adminAccess } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

describe.each(dialects)("dashboard plans page (%s)", (dialect) => {
  let f: Fixture;
  let cookie: string;
  let csrf: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ cookie, csrf } = await adminAccess(f, "plans-page@example.com"));
  });
  afterAll(async () => {
    await f.close();
  });

  const path = "/admin/products/desktop-app/plans";
  const post = (url: string, fields: Record<string, string> = {}) =>
    f.app.inject({
      method: "POST",
      url,
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString(),
    });
  const page = (url = path) => f.app.inject({ method: "GET", url, headers: { cookie } });
  const newPlan = {
    slug: "pro",
    name: "Pro",
    maxMachines: "2",
    edition: "pro",
    editionName: "Professional",
    features: "sync, export",
    durationDays: "365",
    updatesWindowDays: "",
    graceDays: "0",
    onRefund: "revoke",
    onChargeback: "suspend",
    floatingLeaseMinutes: "",
  };

  it("the products page links each product's plans; an empty page offers the form", async () => {
    expect((await page("/admin/products")).body).toContain(`href="${path}"`);
    const empty = await page();
    expect(empty.statusCode).toBe(200);
    expect(empty.body).toContain("No plans yet");
    expect(empty.body).toContain("Create plan");
  });

  it("creates a plan from the form, and shows it", async () => {
    const created = await post(path, newPlan);
    expect(created.statusCode).toBe(303);
    expect(created.headers.location).toBe(path);
    expect(await findPlan(f.db, "desktop-app", "pro")).toMatchObject({
      maxMachines: 2,
      features: ["sync", "export"],
      durationDays: 365,
      updatesWindowDays: null,
      subscription: false,
    });
    const shown = await page(path);
    expect(shown.body).toContain("2 machines per unit · 365 days · updates while valid");
  });

  it("shows a refusal beside its field, with what was sent", async () => {
    const refused = await post(path, { ...newPlan, slug: "Bad Slug", maxMachines: "x" });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('value="Bad Slug"');
    expect(refused.body).toContain("maxMachines must be a whole number");
    const taken = await post(path, newPlan);
    expect(taken.statusCode).toBe(409);
    expect(taken.body).toContain("has a plan with slug &quot;pro&quot;");
  });

  it("edits a plan; its licenses keep their settings", async () => {
    const plan = await findPlan(f.db, "desktop-app", "pro");
    const license = await createLicenseFromPlan(f.db, testActor, plan?.id ?? "");
    const saved = await post(`${path}/pro`, {
      ...newPlan,
      maxMachines: "5",
      subscription: "on",
      graceDays: "7",
    });
    expect(saved.headers.location).toBe(path);
    expect(await findPlan(f.db, "desktop-app", "pro")).toMatchObject({
      maxMachines: 5,
      subscription: true,
      graceDays: 7,
    });
    const row = await f.db
      .selectFrom("licenses")
      .select("max_machines")
      .where("license_key", "=", license.licenseKey)
      .executeTakeFirstOrThrow();
    expect(row.max_machines).toBe(2);
  });

  it("archives, unarchives; deletes only a plan without licenses", async () => {
    expect((await post(`${path}/pro/archive`)).headers.location).toBe(path);
    expect((await page()).body).toContain("archived");
    expect((await post(`${path}/pro/unarchive`)).headers.location).toBe(path);
    const refused = await post(`${path}/pro/delete`);
    expect(refused.statusCode).toBe(409);
    expect(refused.body).toContain("archive it instead");
    await post(path, { ...newPlan, slug: "spare" });
    expect((await post(`${path}/spare/delete`)).headers.location).toBe(path);
    expect(await findPlan(f.db, "desktop-app", "spare")).toBeNull();
  });

  it("answers 404 for an unknown product", async () => {
    expect((await page("/admin/products/nope/plans")).statusCode).toBe(404);
  });
});
