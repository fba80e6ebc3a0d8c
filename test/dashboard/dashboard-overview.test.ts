import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { overview } from "../../src/domain/overview/overview.js";
import { dayOf } from "../../src/domain/releases/usage-counts.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

describe.each(dialects)("dashboard overview (%s)", (dialect) => {
  let f: Fixture;
  let cookie: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ cookie } = await adminAccess(f, "overview@example.com"));
    const productSlug = f.product.slug;
    const licenseKey = await f.createLicense({ maxMachines: 1, customerName: "Full Ltd" });
    const call = (path: string, machineId: string, slug = productSlug) =>
      f.post(path, { licenseKey, machineId, productSlug: slug });
    expect((await call("/api/license/activate", "m-1")).statusCode).toBe(200);
    expect((await call("/api/license/activate", "m-2")).statusCode).toBe(403);
    for (let i = 0; i < 3; i++) {
      expect((await call("/api/license/validate", "m-1")).statusCode).toBe(200);
    }
    expect((await call("/api/license/validate", "m-9")).statusCode).toBe(403);
    // A product nobody has: not counted anywhere.
    await call("/api/license/validate", "m-1", "no-such-product");
    await f.app.usageCounts.flush(f.db);
  });
  afterAll(async () => {
    await f?.close();
  });

  it("adds the license endpoints' answers to the daily counters at flush", async () => {
    const shown = await overview(f.db, f.product.slug);
    const today = shown.days.indexOf(dayOf(Date.now()));
    expect(today).toBe(shown.days.length - 1);
    expect(shown.daily.activation[today]).toBe(1);
    expect(shown.daily.activation_refused[today]).toBe(1);
    expect(shown.daily.validation[today]).toBe(3);
    expect(shown.daily.validation_refused[today]).toBe(1);
    expect(shown.refusals.map((r) => r.event).sort()).toEqual([
      "activation_refused",
      "validation_refused",
    ]);
    expect(shown.atLimit.total).toBe(1);
    const rows = await f.db.selectFrom("daily_counts").selectAll().execute();
    expect(rows.every((row) => row.product_id === f.product.id)).toBe(true);
  });

  it("counts licenses by status and those expiring within 30 days, for a product and for all", async () => {
    const { apiKey } = await adminAccess(f, "statuses@example.com");
    const productSlug = f.otherProduct.slug;
    const keys: string[] = [];
    for (const days of [10, 20, 60, 90]) {
      keys.push(await f.createLicense({ productSlug, expiresAt: Date.now() + days * 86_400_000 }));
    }
    for (const [key, action] of [
      [keys[0], "suspend"],
      [keys[1], "revoke"],
      [keys[2], "revoke"],
    ] as const) {
      const response = await callWithApiKey(
        f,
        apiKey,
        "POST",
        `/api/admin/licenses/${key}/${action}`,
      );
      expect(response.statusCode).toBe(200);
    }
    const one = await overview(f.db, productSlug);
    expect(one.byStatus).toEqual([
      { status: "ACTIVE", count: 1 },
      { status: "SUSPENDED", count: 1 },
      { status: "REVOKED", count: 2 },
    ]);
    expect(one.expiringSoon).toBe(2);
    expect(one.atLimit.total).toBe(0);
    const all = await overview(f.db, null);
    expect(all.byStatus).toEqual([
      { status: "ACTIVE", count: 2 },
      { status: "SUSPENDED", count: 1 },
      { status: "REVOKED", count: 2 },
    ]);
    expect(all.expiringSoon).toBe(2);
    expect(all.atLimit.total).toBe(1);
    expect((await overview(f.db, f.product.slug)).byStatus).toEqual([
      { status: "ACTIVE", count: 1 },
    ]);
  });

  it("is the landing page: counts, charts from our own assets, the licenses at their limit", async () => {
    const response = await f.app.inject({ method: "GET", url: "/admin", headers: { cookie } });
    expect(response.statusCode).toBe(200);
    const page = response.body;
    expect(page).toContain('<script src="/admin/assets/charts.js" defer></script>');
    expect(page).not.toMatch(/src="https?:/);
    expect(page).toContain('<figure class="chart">');
    expect(page).toContain("Full Ltd");
    expect(page).toContain('href="/admin/licenses?only=at-limit"');
    expect(page).toMatch(/<dt>Machine leases ending within 7 days<\/dt>\s*<dd>0<\/dd>/);
    const one = await f.app.inject({
      method: "GET",
      url: `/admin?product=${f.product.slug}`,
      headers: { cookie },
    });
    expect(one.body).toContain('id="versions-in-use"');
    const charts = await f.app.inject({ method: "GET", url: "/admin/assets/charts.js" });
    expect(charts.statusCode).toBe(200);
    expect(charts.body).toContain("uPlot");
  });
});
