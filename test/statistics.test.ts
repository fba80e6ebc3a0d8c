import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { analyzeHotTables } from "../src/db/statistics.js";
import { dialects } from "./helpers/database.js";
import { createFixture, type Fixture } from "./helpers/fixture.js";

// Without statistics PostgreSQL can plan validate's activation check as a scan of every active
// activation of the license. The server analyzes after migrations and at start, where a hot table
// has rows but no statistics (src/db/statistics.ts).
describe.each(dialects)("planner statistics (%s)", (dialect) => {
  let f: Fixture;
  afterEach(async () => {
    await f.close();
  });

  /** Throws away every statistic, as on a database seeded with autovacuum off. */
  async function forgetStatistics(): Promise<void> {
    if (dialect === "sqlite") {
      await sql`analyze`.execute(f.db);
      await sql`delete from sqlite_stat1`.execute(f.db);
      await sql`analyze sqlite_schema`.execute(f.db);
    } else {
      // Column statistics live in pg_statistic until the next ANALYZE.
      await sql`delete from pg_statistic where starelid in (select oid from pg_class
        where relname in ('products', 'licenses', 'activations', 'release_versions',
          'release_artifacts'))`.execute(f.db);
    }
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
    if (dialect === "sqlite") {
      // Row counts only: value samples would make SQLite re-plan the license reads at every run.
      const { rows } = await sql<{ n: number }>`select count(*) as n from sqlite_stat4`.execute(
        f.db,
      );
      expect(rows[0]?.n).toBe(0);
    }
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
});
