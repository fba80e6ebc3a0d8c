import { once } from "node:events";
import BetterSqlite3 from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "../src/db/database.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { removeValueSamples } from "../src/db/sqlite-statistics.js";
import { requireLicenseByKey } from "../src/domain/licenses/license-record.js";
import { createLicense } from "../src/domain/licenses/manage-licenses.js";
import { createProduct } from "../src/domain/products/products.js";
import { createTestDatabase, dialects } from "./helpers/database.js";
import { startServer } from "./helpers/server-process.js";

// With ANALYZE's value samples (sqlite_stat4) in the file, SQLite re-prepares every statement
// that compares an indexed column with a bound value each time it runs: a license read then
// costs several times as much (docs/performance.md, session 9). A server start removes them.

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A migrated SQLite file with a few licenses, as an operator would find it; returns its path. */
async function populatedSqliteFile(): Promise<{ url: string; path: string; keys: string[] }> {
  const testDatabase = await createTestDatabase("sqlite");
  cleanups.push(() => testDatabase.drop());
  const database = await openDatabase(testDatabase.url);
  const keys: string[] = [];
  try {
    await migrateToLatest(database.db);
    await createProduct(database.db, { slug: "app", name: "App" });
    for (let i = 0; i < 20; i++) {
      const license = await createLicense(database.db, { productSlug: "app", maxMachines: 2 });
      keys.push(license.licenseKey);
    }
  } finally {
    await database.close();
  }
  return { url: testDatabase.url, path: testDatabase.url.slice("sqlite:".length), keys };
}

/** What an operator's `sqlite3 shipkey.db ANALYZE` leaves behind. */
function analyzeAsOperator(path: string): void {
  const sqlite = new BetterSqlite3(path);
  try {
    sqlite.exec("analyze");
  } finally {
    sqlite.close();
  }
}

function statisticsRows(path: string): { stat1: number; stat4: number } {
  const sqlite = new BetterSqlite3(path, { readonly: true });
  try {
    const count = (table: string) =>
      (sqlite.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n;
    return { stat1: count("sqlite_stat1"), stat4: count("sqlite_stat4") };
  } finally {
    sqlite.close();
  }
}

describe("ANALYZE's value samples on SQLite", () => {
  it("are removed, while its row counts (sqlite_stat1) are kept and reads still answer", async () => {
    const { url, path, keys } = await populatedSqliteFile();
    analyzeAsOperator(path);
    const before = statisticsRows(path);
    expect(before.stat4).toBeGreaterThan(0);
    expect(before.stat1).toBeGreaterThan(0);

    const database = await openDatabase(url);
    try {
      expect(await removeValueSamples(database.db)).toBe("removed");
      const license = await requireLicenseByKey(database.db, keys[0] ?? "");
      expect(license.maxMachines).toBe(2);
    } finally {
      await database.close();
    }
    expect(statisticsRows(path)).toEqual({ stat1: before.stat1, stat4: 0 });
  });

  it("leave a file that has none, or only row counts, as it is", async () => {
    const { url, path } = await populatedSqliteFile();
    const database = await openDatabase(url);
    try {
      expect(await removeValueSamples(database.db)).toBe("none");
      analyzeAsOperator(path);
      expect(await removeValueSamples(database.db)).toBe("removed");
      expect(await removeValueSamples(database.db)).toBe("none");
    } finally {
      await database.close();
    }
  });

  it("are removed when the server starts, with a warning that says why", async () => {
    const { url, path } = await populatedSqliteFile();
    analyzeAsOperator(path);
    const server = await startServer({ DATABASE_URL: url });
    try {
      expect((await fetch(`${server.baseUrl}/readyz`)).status).toBe(200);
      expect(server.output()).toContain("Removed ANALYZE's value samples (sqlite_stat4)");
    } finally {
      server.child.kill("SIGTERM");
      await once(server.child, "exit");
    }
    expect(statisticsRows(path).stat4).toBe(0);
  });
});

describe.runIf(dialects.includes("postgres"))("ANALYZE's value samples on PostgreSQL", () => {
  it("are not a thing: nothing is removed", async () => {
    const testDatabase = await createTestDatabase("postgres");
    cleanups.push(() => testDatabase.drop());
    const database = await openDatabase(testDatabase.url);
    try {
      await migrateToLatest(database.db);
      expect(await removeValueSamples(database.db)).toBe("none");
    } finally {
      await database.close();
    }
  });
});
