import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { analyzeHotTables, refreshStaleStatistics } from "../../src/db/statistics.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

// Without statistics PostgreSQL can plan validate's activation check as a scan of every active
// activation of the license. The server analyzes after migrations and at start, where a hot table
// has rows but no statistics; on SQLite it removes them instead (src/db/statistics.ts).
describe("planner statistics (sqlite)", () => {
  let f: Fixture;
  afterEach(async () => {
    await f.close();
  });

  it("are removed: taken while a table was small, they made the feeds scan every entry", async () => {
    f = await createFixture("sqlite");
    const published = await f.post(
      "/api/releases/publish",
      {
        productSlug: f.product.slug,
        version: "1.0.0",
        channel: "STABLE",
        releases: [{ platform: "WINDOWS", arch: "X64", downloadUrl: "https://cdn.example.com/a" }],
      },
      { authorization: `Bearer ${f.publishKey}` },
    );
    expect(published.statusCode).toBe(200);
    await sql`analyze`.execute(f.db); // release tables of one row: stale once they grow
    const feedPlan = () =>
      sql<{ detail: string }>`explain query plan
        select id from release_versions where product_id = 'p' and sort_key > ''
          and exists (select 1 from release_artifacts a where a.version_id = release_versions.id
            and a.platform = 'WINDOWS' and a.arch = 'X64' and a.signature is not null)
        order by sort_key desc limit 20`
        .execute(f.db)
        .then(({ rows }) => rows.map((row) => row.detail).join("; "));
    const stale = await sql<{ n: number }>`select count(*) as n from sqlite_stat1`.execute(f.db);
    expect(stale.rows[0]?.n).toBeGreaterThan(0);
    expect(await feedPlan()).toMatch(/SCAN a/);
    expect(await analyzeHotTables(f.db)).toEqual([]);
    const left = await sql<{ n: number }>`select count(*) as n from sqlite_stat1`.execute(f.db);
    expect(left.rows[0]?.n).toBe(0);
    expect(await feedPlan()).toMatch(/SEARCH a .*USING .*INDEX/);
    expect(await analyzeHotTables(f.db, true)).toEqual([]);
  });
});

describe.each(dialects.filter((d) => d === "postgres"))("planner statistics (%s)", (dialect) => {
  let f: Fixture;
  afterEach(async () => {
    await f.close();
  });

  /** Throws away every statistic, as on a database seeded with autovacuum off. */
  async function forgetStatistics(): Promise<void> {
    // Column statistics live in pg_statistic until the next ANALYZE.
    await sql`delete from pg_statistic where starelid in (select oid from pg_class
      where relname in ('products', 'licenses', 'activations', 'release_versions',
        'release_artifacts'))`.execute(f.db);
  }

  it("analyzes the hot tables that have rows but no statistics, once", async () => {
    f = await createFixture(dialect);
    const licenseKey = await f.createLicense({ maxMachines: 5 });
    for (const machineId of ["m-1", "m-2"]) {
      await f.post("/api/license/activate", { licenseKey, machineId, productSlug: f.product.slug });
    }
    await forgetStatistics();
    expect((await analyzeHotTables(f.db)).sort()).toEqual(["activations", "licenses", "products"]);
    expect(await analyzeHotTables(f.db)).toEqual([]);
    const validate = await f.post("/api/license/validate", {
      licenseKey,
      machineId: "m-1",
      productSlug: f.product.slug,
    });
    expect(validate.json()).toMatchObject({ valid: true, activeMachines: 2 });
  });

  it("leaves empty tables alone unless asked to analyze everything", async () => {
    f = await createFixture(dialect);
    await sql`delete from products`.execute(f.db);
    await sql`delete from api_keys`.execute(f.db);
    await forgetStatistics();
    expect(await analyzeHotTables(f.db)).toEqual([]);
    expect((await analyzeHotTables(f.db, true)).length).toBe(5);
  });

  it("a table filled after the start is analyzed once enough of it changed, one table a call", async () => {
    f = await createFixture(dialect);
    await analyzeHotTables(f.db, true);
    expect(await refreshStaleStatistics(f.db)).toBeNull();
    const product = f.product.id;
    await sql`insert into licenses (id, license_key, product_id, status, features, max_machines,
        active_machines, created_at, updated_at)
      select 'lic_bulk_' || n, 'BULK-' || n, ${product}, 'ACTIVE', '[]', 1, 0, 0, 0
      from generate_series(1, 3000) as n`.execute(f.db);
    // The statistics collector counts the change within a second or so.
    let analyzed: string | null = null;
    for (let attempt = 0; attempt < 50 && analyzed === null; attempt++) {
      analyzed = await refreshStaleStatistics(f.db);
      if (analyzed === null) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(analyzed).toBe("licenses");
    const stats = await sql<{ n: number }>`select count(*)::int as n from pg_stats
      where schemaname = current_schema() and tablename = 'licenses'`.execute(f.db);
    expect(stats.rows[0]?.n).toBeGreaterThan(0);
    // Counted as analyzed: nothing left to do.
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(await refreshStaleStatistics(f.db)).toBeNull();
  });
});
