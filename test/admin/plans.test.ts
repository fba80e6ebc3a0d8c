import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLicenseFromPlan } from "../../src/actions/plans.js";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import { findPlan } from "../../src/domain/plans/plans.js";
import {
  licenseSettingsFromPlan,
  planExpiry,
  statusAfter,
} from "../../src/domain/plans/license-from-plan.js";
import { testActor } from "../helpers/actions.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

const day = 86_400_000;

describe.each(dialects)("plans on the admin API (%s)", (dialect) => {
  let f: Fixture;
  let apiKey: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ apiKey } = await adminAccess(f, "plans@example.com"));
  });
  afterAll(async () => {
    await f.close();
  });

  const call = (method: "GET" | "POST" | "PATCH" | "DELETE", url: string, body?: unknown) =>
    callWithApiKey(f, apiKey, method, url, body);
  const plans = "/api/admin/products/desktop-app/plans";
  const create = (body: Record<string, unknown>) =>
    call("POST", plans, { name: "Pro", maxMachines: 2, ...body });

  it("creates a plan with its defaults, and shows it by slug and in the list", async () => {
    const created = await create({ slug: "pro" });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toEqual({
      id: expect.stringMatching(/^pln_[0-9A-Z]{22}$/),
      product: "desktop-app",
      slug: "pro",
      name: "Pro",
      edition: null,
      editionName: null,
      features: [],
      maxMachines: 2,
      durationDays: null,
      updatesWindowDays: null,
      subscription: false,
      graceDays: 0,
      onRefund: "revoke",
      onChargeback: "suspend",
      floatingLeaseMinutes: null,
      archivedAt: null,
      licenses: 0,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect((await call("GET", `${plans}/pro`)).json()).toEqual(created.json());
    const list = await call("GET", plans);
    expect(list.json().items.map((p: { slug: string }) => p.slug)).toContain("pro");
  });

  it("takes every setting", async () => {
    const body = {
      slug: "team-yearly",
      name: "Team, yearly",
      edition: "team",
      editionName: "Team",
      features: ["sync", "export"],
      maxMachines: 5,
      durationDays: 365,
      updatesWindowDays: 365,
      subscription: true,
      graceDays: 7,
      onRefund: "suspend",
      onChargeback: "revoke",
      floatingLeaseMinutes: 30,
    };
    const created = await call("POST", plans, body);
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject(body);
  });

  it("refuses a taken slug, a bad slug, unknown fields and out-of-range numbers", async () => {
    await create({ slug: "taken" });
    const again = await create({ slug: "taken" });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({
      error: 'Product "desktop-app" has a plan with slug "taken"',
      code: "PLAN_SLUG_TAKEN",
      field: "slug",
    });
    // Another product may use the same slug.
    const other = await call("POST", "/api/admin/products/other-app/plans", {
      slug: "taken",
      name: "Other",
      maxMachines: 1,
    });
    expect(other.statusCode).toBe(201);
    expect((await create({ slug: "Not A Slug" })).json()).toMatchObject({
      code: "INVALID_FIELD_VALUE",
      field: "slug",
    });
    const unknown = await create({ slug: "u", seats: 3 });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().code).toBe("UNKNOWN_FIELD");
    for (const bad of [
      { maxMachines: 0 },
      { durationDays: 0 },
      { graceDays: -1 },
      { floatingLeaseMinutes: 1441 },
      { onRefund: "refund" },
    ]) {
      const response = await create({ slug: "bad", ...bad });
      expect(response.statusCode, JSON.stringify(bad)).toBe(400);
    }
    const noPeriod = await create({ slug: "sub", subscription: true });
    expect(noPeriod.statusCode).toBe(400);
    expect(noPeriod.json()).toMatchObject({ code: "INVALID_FIELD_VALUE", field: "durationDays" });
  });

  it("answers 404 for an unknown product or plan", async () => {
    expect((await call("GET", "/api/admin/products/nope/plans")).json().code).toBe(
      "PRODUCT_NOT_FOUND",
    );
    const missing = await call("GET", `${plans}/nope`);
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({
      error: 'Product "desktop-app" has no plan "nope"',
      code: "PLAN_NOT_FOUND",
    });
  });

  it("makes a license from a plan: its settings copied, seats = slots × quantity", async () => {
    await create({
      slug: "yearly",
      edition: "pro",
      editionName: "Professional",
      features: ["sync"],
      maxMachines: 3,
      durationDays: 365,
      updatesWindowDays: 180,
    });
    const before = Date.now();
    const made = await call("POST", `${plans}/yearly/licenses`, {
      quantity: 2,
      customerEmail: "ada@example.com",
      externalId: "order-1",
    });
    expect(made.statusCode).toBe(201);
    const plan = await findPlan(f.db, "desktop-app", "yearly");
    expect(made.json()).toMatchObject({
      product: "desktop-app",
      planId: plan?.id,
      edition: "pro",
      editionName: "Professional",
      features: ["sync"],
      maxMachines: 6,
      customerEmail: "ada@example.com",
      externalId: "order-1",
      status: "ACTIVE",
    });
    const expires = Date.parse(made.json().expiresAt);
    expect(expires).toBeGreaterThanOrEqual(before + 365 * day);
    expect(expires).toBeLessThanOrEqual(Date.now() + 365 * day);
    const row = await f.db
      .selectFrom("licenses")
      .select(["updates_until", "plan_id"])
      .where("license_key", "=", made.json().licenseKey)
      .executeTakeFirstOrThrow();
    expect(Number(row.updates_until)).toBe(expires - 185 * day);
    expect(row.plan_id).toBe(plan?.id);
    // Shown on the license's own answer, and counted on the plan's.
    const shown = await call("GET", `/api/admin/licenses/${made.json().licenseKey}`);
    expect(shown.json().planId).toBe(plan?.id);
    expect((await call("GET", `${plans}/yearly`)).json().licenses).toBe(1);
    // A license made by hand names no plan.
    const byHand = await call("POST", "/api/admin/licenses", {
      productSlug: "desktop-app",
      maxMachines: 1,
    });
    expect(byHand.json().planId).toBeNull();
  });

  it("changing a plan changes no existing license", async () => {
    await create({ slug: "changing", edition: "basic", features: ["a"], maxMachines: 1 });
    const made = (await call("POST", `${plans}/changing/licenses`, {})).json();
    const before = (await call("GET", `/api/admin/licenses/${made.licenseKey}`)).json();
    const patched = await call("PATCH", `${plans}/changing`, {
      edition: "premium",
      features: ["a", "b"],
      maxMachines: 9,
      durationDays: 30,
      name: "Changed",
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ edition: "premium", maxMachines: 9, name: "Changed" });
    const after = (await call("GET", `/api/admin/licenses/${made.licenseKey}`)).json();
    expect(after).toEqual(before);
    expect(after).toMatchObject({ edition: "basic", features: ["a"], maxMachines: 1 });
    expect(after.expiresAt).toBeNull();
    // The next license takes the new settings.
    const next = (await call("POST", `${plans}/changing/licenses`, {})).json();
    expect(next).toMatchObject({ edition: "premium", features: ["a", "b"], maxMachines: 9 });
  });

  it("audits plan writes with what changed", async () => {
    await create({ slug: "audited" });
    await call("PATCH", `${plans}/audited`, { maxMachines: 4, name: "Pro" });
    const audit = await call("GET", "/api/admin/audit?action=plan.update");
    const [entry] = audit.json().items;
    expect(entry).toMatchObject({
      action: "plan.update",
      target: { type: "plan" },
      details: {
        product: "desktop-app",
        slug: "audited",
        changes: { maxMachines: { from: 2, to: 4 } },
      },
    });
  });

  it("refuses PATCH with no setting, an unknown one, or the slug", async () => {
    await create({ slug: "strict" });
    expect((await call("PATCH", `${plans}/strict`, {})).statusCode).toBe(400);
    expect((await call("PATCH", `${plans}/strict`, { slug: "other" })).json().code).toBe(
      "UNKNOWN_FIELD",
    );
    const sub = await call("PATCH", `${plans}/strict`, { subscription: true });
    expect(sub.json()).toMatchObject({ code: "INVALID_FIELD_VALUE", field: "durationDays" });
  });

  it("deletes a plan without licenses; one with licenses is archived, not deleted", async () => {
    await create({ slug: "unused" });
    const deleted = await call("DELETE", `${plans}/unused`);
    expect(deleted.json()).toEqual({ deleted: true, product: "desktop-app", plan: "unused" });
    expect((await call("GET", `${plans}/unused`)).statusCode).toBe(404);

    await create({ slug: "used" });
    const license = (await call("POST", `${plans}/used/licenses`, {})).json();
    const refused = await call("DELETE", `${plans}/used`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toEqual({
      error: 'Plan "used" has licenses; archive it instead',
      code: "PLAN_IN_USE",
    });
    const archived = await call("POST", `${plans}/used/archive`);
    expect(archived.statusCode).toBe(200);
    expect(archived.json().archivedAt).toEqual(expect.any(String));
    // Archiving again keeps the first time.
    expect((await call("POST", `${plans}/used/archive`)).json().archivedAt).toBe(
      archived.json().archivedAt,
    );
    const makes = await call("POST", `${plans}/used/licenses`, {});
    expect(makes.statusCode).toBe(409);
    expect(makes.json().code).toBe("PLAN_ARCHIVED");
    // Its license is untouched.
    expect((await call("GET", `/api/admin/licenses/${license.licenseKey}`)).json().status).toBe(
      "ACTIVE",
    );
    const back = await call("POST", `${plans}/used/unarchive`);
    expect(back.json().archivedAt).toBeNull();
    expect((await call("POST", `${plans}/used/licenses`, {})).statusCode).toBe(201);
  });

  it("scopes: products:read reads, products:write writes; a key for another product cannot", async () => {
    await create({ slug: "scoped" });
    const reader = (await createApiKey(f.db, { name: "r", scopes: ["products:read"] })).key;
    expect((await callWithApiKey(f, reader, "GET", `${plans}/scoped`)).statusCode).toBe(200);
    const write = await callWithApiKey(f, reader, "PATCH", `${plans}/scoped`, { name: "x" });
    expect(write.statusCode).toBe(403);
    const other = (
      await createApiKey(f.db, {
        name: "other",
        scopes: ["products:read", "products:write"],
        productIds: [f.otherProduct.id],
      })
    ).key;
    const refused = await callWithApiKey(f, other, "GET", `${plans}/scoped`);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().code).toBe("PRODUCT_NOT_IN_KEY");
  });

  it("deleting a product deletes its plans, unless a moved license was made from one", async () => {
    const make = async (slug: string) => {
      expect((await call("POST", "/api/admin/products", { slug, name: slug })).statusCode).toBe(
        201,
      );
      const plan = await call("POST", `/api/admin/products/${slug}/plans`, {
        slug: "basic",
        name: "Basic",
        maxMachines: 1,
      });
      expect(plan.statusCode).toBe(201);
    };
    await make("short-lived");
    expect((await call("DELETE", "/api/admin/products/short-lived")).statusCode).toBe(200);
    await make("moved-from");
    const license = (
      await call("POST", "/api/admin/products/moved-from/plans/basic/licenses", {})
    ).json();
    const moved = await call("POST", `/api/admin/licenses/${license.licenseKey}/move`, {
      productSlug: "desktop-app",
    });
    expect(moved.statusCode).toBe(200);
    const refused = await call("DELETE", "/api/admin/products/moved-from");
    expect(refused.statusCode).toBe(409);
    expect(refused.json().code).toBe("PRODUCT_IN_USE");
  });

  it("replays a creation sent twice with one Idempotency-Key, making one plan", async () => {
    const send = () =>
      f.app.inject({
        method: "POST",
        url: plans,
        headers: {
          authorization: `Bearer ${apiKey}`,
          "content-type": "application/json",
          "idempotency-key": "plan-once",
        },
        payload: JSON.stringify({ slug: "once", name: "Once", maxMachines: 1 }),
      });
    const first = await send();
    const again = await send();
    expect(first.statusCode).toBe(201);
    expect(again.statusCode).toBe(201);
    expect(again.json()).toEqual(first.json());
    const rows = await f.db.selectFrom("plans").select("id").where("slug", "=", "once").execute();
    expect(rows).toHaveLength(1);
  });

  it("a key limited to a product reads the audit entries of its plans only", async () => {
    const limited = (
      await createApiKey(f.db, {
        name: "auditor",
        scopes: ["audit:read"],
        productIds: [f.otherProduct.id],
      })
    ).key;
    const entries = (
      await callWithApiKey(f, limited, "GET", "/api/admin/audit?action=plan.create")
    ).json().items as Array<{ details: { product: string } }>;
    expect(entries.length).toBeGreaterThan(0);
    expect(new Set(entries.map((e) => e.details.product))).toEqual(new Set(["other-app"]));
  });

  it("createLicenseFromPlan (the payment integrations' call): a subscription's period and grace", async () => {
    const created = await create({
      slug: "monthly",
      subscription: true,
      durationDays: 30,
      graceDays: 3,
      maxMachines: 1,
    });
    const periodEnd = Date.parse("2031-05-01T00:00:00.000Z");
    const license = await createLicenseFromPlan(f.db, testActor, created.json().id, {
      quantity: 3,
      periodEndsAt: periodEnd,
      customerName: "Ada",
      externalId: "sub_1",
    });
    expect(license).toMatchObject({
      maxMachines: 3,
      planId: created.json().id,
      expiresAt: new Date(periodEnd + 3 * day).toISOString(),
      customerName: "Ada",
    });
    const [entry] = (
      await f.db
        .selectFrom("audit_log")
        .select("details")
        .where("action", "=", "license.create")
        .orderBy("at", "desc")
        .orderBy("id", "desc")
        .limit(1)
        .execute()
    ).map((row) => JSON.parse(row.details));
    expect(entry).toMatchObject({ planId: created.json().id, quantity: 3 });
    await expect(createLicenseFromPlan(f.db, testActor, "pln_nope")).rejects.toMatchObject({
      code: "PLAN_NOT_FOUND",
    });
  });
});

describe("a plan's license settings (pure)", () => {
  const plan = {
    id: "pln_1",
    product: "app",
    slug: "p",
    name: "P",
    edition: "pro",
    editionName: "Pro",
    features: ["x"],
    maxMachines: 2,
    durationDays: null,
    updatesWindowDays: 365,
    subscription: false,
    graceDays: 5,
    onRefund: "revoke" as const,
    onChargeback: "nothing" as const,
    floatingLeaseMinutes: null,
    archivedAt: null,
    licenses: 0,
    createdAt: "",
    updatedAt: "",
  };
  const now = Date.parse("2030-01-01T00:00:00.000Z");

  it("a perpetual plan: no expiry, updates for its window, grace unused", () => {
    expect(licenseSettingsFromPlan(plan, { quantity: 4 }, now)).toMatchObject({
      maxMachines: 8,
      expiresAt: null,
      updatesUntil: now + 365 * day,
      planId: "pln_1",
    });
    expect(planExpiry({ ...plan, durationDays: 10 }, now)).toBe(now + 10 * day);
  });

  it("a subscription: the period (given, or durationDays) plus grace", () => {
    const sub = { ...plan, subscription: true, durationDays: 30 };
    expect(planExpiry(sub, now)).toBe(now + 35 * day);
    expect(planExpiry(sub, now, now + day)).toBe(now + 6 * day);
  });

  it("refuses a quantity out of range", () => {
    expect(() => licenseSettingsFromPlan(plan, { quantity: 0 }, now)).toThrow(/quantity/);
    expect(() =>
      licenseSettingsFromPlan({ ...plan, maxMachines: 2_000_000_000 }, { quantity: 2 }, now),
    ).toThrow(/quantity/);
  });

  it("refund and chargeback rules", () => {
    expect(statusAfter(plan, "refund")).toBe("REVOKED");
    expect(statusAfter(plan, "chargeback")).toBeNull();
    expect(statusAfter({ ...plan, onRefund: "suspend" }, "refund")).toBe("SUSPENDED");
  });
});
