import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { overview } from "../../src/domain/overview/overview.js";
import { createProduct } from "../../src/domain/products/products.js";
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

  // The tests below use a product of their own, after the ones above, whose counts they keep.
  const day = 86_400_000;
  const today = (days: string[]) => days.indexOf(dayOf(Date.now()));
  const apiKeyFor = async (email: string) => (await adminAccess(f, email)).apiKey;

  it("counts an ACTIVE license past its expiry as EXPIRED; a suspended one stays SUSPENDED", async () => {
    const { slug: productSlug } = await createProduct(f.db, { slug: "expiry-app", name: "E" });
    await f.createLicense({ productSlug });
    await f.createLicense({ productSlug, expiresAt: Date.now() + 10 * day });
    const expired = await f.createLicense({ productSlug, expiresAt: Date.now() - day });
    const suspended = await f.createLicense({ productSlug, expiresAt: Date.now() - 2 * day });
    const apiKey = await apiKeyFor("expiry@example.com");
    const suspend = `/api/admin/licenses/${suspended}/suspend`;
    expect((await callWithApiKey(f, apiKey, "POST", suspend)).statusCode).toBe(200);
    const shown = await overview(f.db, productSlug);
    expect(shown.byStatus).toEqual([
      { status: "ACTIVE", count: 2 },
      { status: "EXPIRED", count: 1 },
      { status: "SUSPENDED", count: 1 },
    ]);
    const all = await overview(f.db, null);
    expect(all.byStatus.find((s) => s.status === "EXPIRED")).toEqual({
      status: "EXPIRED",
      count: 1,
    });
    const page = await f.app.inject({
      method: "GET",
      url: `/admin?product=${productSlug}`,
      headers: { cookie },
    });
    const bucket = `/admin/licenses?status=ACTIVE&amp;expired=yes&amp;product=${productSlug}`;
    expect(page.body).toContain(`href="${bucket}"`);
    expect(page.body).toContain(
      `href="/admin/licenses?status=ACTIVE&amp;expired=no&amp;product=${productSlug}"`,
    );
    // The bucket's link lists exactly that license.
    const list = await f.app.inject({
      method: "GET",
      url: bucket.replaceAll("&amp;", "&"),
      headers: { cookie },
    });
    expect(list.body).toContain(expired);
    expect(list.body).not.toContain(suspended);
  });

  it("counts a deactivation under the license's product: the request names none, or another", async () => {
    const { slug: productSlug } = await createProduct(f.db, { slug: "counted-app", name: "C" });
    const licenseKey = await f.createLicense({ productSlug, maxMachines: 3 });
    for (const machineId of ["d-1", "d-2"]) {
      const activated = await f.post("/api/license/activate", {
        licenseKey,
        machineId,
        productSlug,
      });
      expect(activated.statusCode).toBe(200);
    }
    const deactivated = await f.post("/api/license/deactivate", { licenseKey, machineId: "d-1" });
    expect(deactivated.statusCode).toBe(200);
    expect(deactivated.body).toBe(
      '{"success":true,"message":"Machine deactivated","machineId":"d-1"}',
    );
    const named = await f.post("/api/license/deactivate", {
      licenseKey,
      machineId: "d-2",
      productSlug: f.product.slug,
    });
    expect(named.statusCode).toBe(200);
    // Refused: not a deactivation.
    const again = await f.post("/api/license/deactivate", { licenseKey, machineId: "d-1" });
    expect(again.statusCode).toBe(404);
    await f.app.usageCounts.flush(f.db);
    const shown = await overview(f.db, productSlug);
    expect(shown.daily.deactivation[today(shown.days)]).toBe(2);
    expect(shown.daily.activation[today(shown.days)]).toBe(2);
    const other = await overview(f.db, f.product.slug);
    expect(other.daily.deactivation[today(other.days)]).toBe(0);
  });

  it("counts an admin's deactivations too: one machine, and every machine of a reset", async () => {
    const { slug: productSlug } = await createProduct(f.db, { slug: "admin-counted", name: "A" });
    const licenseKey = await f.createLicense({ productSlug, maxMachines: 4 });
    for (const machineId of ["a-1", "a-2", "a-3"]) {
      await f.post("/api/license/activate", { licenseKey, machineId, productSlug });
    }
    const apiKey = await apiKeyFor("counting@example.com");
    const one = `/api/admin/licenses/${licenseKey}/machines/a-1`;
    expect((await callWithApiKey(f, apiKey, "DELETE", one)).statusCode).toBe(200);
    const reset = `/api/admin/licenses/${licenseKey}/reset-machines`;
    expect((await callWithApiKey(f, apiKey, "POST", reset)).statusCode).toBe(200);
    // A reset of a license without machines counts nothing.
    expect((await callWithApiKey(f, apiKey, "POST", reset)).statusCode).toBe(200);
    const shown = await overview(f.db, productSlug);
    expect(shown.daily.deactivation[today(shown.days)]).toBe(3);
  });

  it("shows the failing webhook endpoints and the rollouts in progress, per product", async () => {
    const { slug: productSlug } = await createProduct(f.db, { slug: "watched-app", name: "W" });
    const apiKey = await apiKeyFor("watched@example.com");
    const empty = await f.app.inject({
      method: "GET",
      url: `/admin?product=${productSlug}`,
      headers: { cookie },
    });
    expect(empty.body).toContain("No webhook endpoint is failing.");
    expect(empty.body).toContain("No version is in a rollout.");
    const endpoint = async (url: string, products?: string[]) => {
      const response = await callWithApiKey(f, apiKey, "POST", "/api/admin/webhook-endpoints", {
        url,
        events: ["license.created"],
        ...(products ? { products } : {}),
      });
      expect(response.statusCode, response.body).toBe(201);
      return (response.json() as { id: string }).id;
    };
    const failing = await endpoint("https://hooks.example.com/failing", [productSlug]);
    const disabled = await endpoint("https://hooks.example.com/disabled");
    const elsewhere = await endpoint("https://hooks.example.com/elsewhere", [f.product.slug]);
    await endpoint("https://hooks.example.com/fine", [productSlug]);
    const since = Date.now() - 3_600_000;
    // As the delivery worker leaves them after failed attempts.
    for (const [id, failures, reason] of [
      [failing, 22, null],
      [disabled, 40, "failing for 5 days"],
      [elsewhere, 3, null],
    ] as const) {
      await f.db
        .updateTable("webhook_endpoints")
        .set({
          consecutive_failures: failures,
          failing_since: since,
          ...(reason === null ? {} : { enabled: 0, disabled_reason: reason }),
        })
        .where("id", "=", id)
        .execute();
    }
    const shown = await overview(f.db, productSlug);
    expect(shown.failingEndpoints.map((e) => [e.id, e.consecutiveFailures, e.enabled])).toEqual([
      [disabled, 40, false],
      [failing, 22, true],
    ]);
    expect(shown.failingEndpoints[0]?.disabledReason).toBe("failing for 5 days");
    expect(shown.failingEndpoints[1]?.failingSince).toBe(new Date(since).toISOString());
    expect((await overview(f.db, null)).failingEndpoints).toHaveLength(3);

    for (const version of ["1.0.0", "1.1.0", "1.2.0"]) {
      const published = await f.post(
        "/api/releases/publish",
        {
          productSlug,
          version,
          channel: "STABLE",
          releases: [
            { platform: "LINUX", arch: "X64", downloadUrl: `https://cdn.example.com/${version}` },
          ],
        },
        { authorization: `Bearer ${f.publishKey}` },
      );
      expect(published.statusCode, published.body).toBe(200);
    }
    const rollout = (version: string, action = "", body?: unknown) =>
      callWithApiKey(
        f,
        apiKey,
        "POST",
        `/api/admin/products/${productSlug}/releases/${version}/rollout${action}`,
        body,
      );
    expect((await rollout("1.1.0", "", { percent: 25 })).statusCode).toBe(200);
    expect((await rollout("1.2.0", "", { percent: 5 })).statusCode).toBe(200);
    expect((await rollout("1.2.0", "/pause")).statusCode).toBe(200);
    expect((await rollout("1.0.0", "", { percent: 50 })).statusCode).toBe(200);
    expect((await rollout("1.0.0", "/complete")).statusCode).toBe(200);
    const withRollouts = await overview(f.db, productSlug);
    expect(withRollouts.rollouts.map((r) => [r.product, r.version, r.state, r.percent])).toEqual([
      [productSlug, "1.2.0", "paused", 5],
      [productSlug, "1.1.0", "rolling", 25],
    ]);
    expect((await overview(f.db, f.product.slug)).rollouts).toEqual([]);
    expect((await overview(f.db, null)).rollouts).toHaveLength(2);

    const page = await f.app.inject({
      method: "GET",
      url: `/admin?product=${productSlug}`,
      headers: { cookie },
    });
    const section = (id: string) => page.body.split(`id="${id}"`)[1]?.split("</section>")[0] ?? "";
    const endpoints = section("failing-endpoints");
    expect(endpoints).toContain(`href="/admin/webhooks/${failing}"`);
    expect(endpoints).toContain(`href="/admin/webhooks/${disabled}"`);
    expect(endpoints).not.toContain(elsewhere);
    expect(endpoints.replace(/\s+/g, " ")).toContain("22 failed attempts in a row");
    expect(endpoints).toContain("failing for 5 days");
    const rollouts = section("rollouts").replace(/\s+/g, " ");
    expect(rollouts).toContain("at 25 %");
    expect(rollouts).toContain("paused at 5 %");
    expect(rollouts).not.toContain("1.0.0");
  });
});
