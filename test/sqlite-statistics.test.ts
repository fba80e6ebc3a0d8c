import { once } from "node:events";
import BetterSqlite3 from "better-sqlite3";
import { Kysely, SqliteDialect, sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "../src/db/database.js";
import { migrateToLatest } from "../src/db/migrate.js";
import type { DB } from "../src/db/schema.js";
import { removeValueSamples } from "../src/db/sqlite-statistics.js";
import { requireLicenseByKey } from "../src/domain/licenses/license-record.js";
import { createLicense } from "../src/domain/licenses/manage-licenses.js";
import { createProduct } from "../src/domain/products/products.js";
import { createTestDatabase, dialects } from "./helpers/database.js";
import { startServer } from "./helpers/server-process.js";

// With ANALYZE's value samples (sqlite_stat4) in the file, SQLite re-prepares every statement
// that compares an indexed column with a bound value each time it runs: a license read then
// costs several times as much (docs/performance-history.md, session 9). A server start removes them.

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

/** Works on the file over a connection of its own, as an operator's tool would, then closes it. */
function withFile<T>(
  path: string,
  options: BetterSqlite3.Options,
  use: (sqlite: BetterSqlite3.Database) => T,
): T {
  const sqlite = new BetterSqlite3(path, options);
  try {
    return use(sqlite);
  } finally {
    sqlite.close();
  }
}

/** What an operator's `sqlite3 shipkey.db ANALYZE` leaves behind. */
function analyzeAsOperator(path: string): void {
  withFile(path, {}, (sqlite) => sqlite.exec("analyze"));
}

function statisticsRows(path: string): { stat1: number; stat4: number } {
  return withFile(path, { readonly: true }, (sqlite) => {
    const count = (table: string) =>
      (sqlite.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n;
    return { stat1: count("sqlite_stat1"), stat4: count("sqlite_stat4") };
  });
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

  it("leave a file without statistics as it is", async () => {
    const { url, path } = await populatedSqliteFile();
    const database = await openDatabase(url);
    try {
      expect(await removeValueSamples(database.db)).toBe("none");
    } finally {
      await database.close();
    }
    const statTables = withFile(path, { readonly: true }, (sqlite) =>
      sqlite.prepare("select name from sqlite_schema where name like 'sqlite_stat%'").all(),
    );
    expect(statTables).toEqual([]);
  });

  it("leave a file whose samples are gone, with only row counts, as it is", async () => {
    const { url, path } = await populatedSqliteFile();
    analyzeAsOperator(path);
    const database = await openDatabase(url);
    try {
      expect(await removeValueSamples(database.db)).toBe("removed");
      const after = statisticsRows(path);
      expect(await removeValueSamples(database.db)).toBe("none");
      expect(statisticsRows(path)).toEqual(after);
    } finally {
      await database.close();
    }
  });

  // The samples change which index SQLite picks when one value of a column is most of the table;
  // row counts alone cannot tell. So the plan shows what the connection is planning with.
  it("stop being used by the connection that removed them, at once", async () => {
    const { url, path } = await populatedSqliteFile();
    withFile(path, {}, (sqlite) => {
      sqlite.exec(`create table skewed (a integer, b integer);
        create index skewed_a on skewed (a); create index skewed_b on skewed (b)`);
      const insert = sqlite.prepare("insert into skewed (a, b) values (?, ?)");
      sqlite.transaction(() => {
        for (let i = 0; i < 10_000; i++) insert.run(i < 9_000 ? 0 : i, i % 100);
      })();
      sqlite.exec("analyze");
    });
    const database = await openDatabase(url);
    const indexUsed = async () => {
      const { rows } = await sql<{ detail: string }>`
        explain query plan select * from skewed where a = ${0} and b = ${5}`.execute(database.db);
      return rows.map((row) => row.detail).join("; ");
    };
    try {
      expect(await indexUsed()).toContain("skewed_b"); // the samples know a = 0 is 90 %
      expect(await removeValueSamples(database.db)).toBe("removed");
      expect(await indexUsed()).toContain("skewed_a"); // row counts alone: ~10 rows per a
    } finally {
      await database.close();
    }
  });

  it("that cannot be removed fail the call and leave the file as it was", async () => {
    const { path } = await populatedSqliteFile();
    analyzeAsOperator(path);
    const before = statisticsRows(path);
    const db = new Kysely<DB>({
      dialect: new SqliteDialect({ database: new BetterSqlite3(path, { readonly: true }) }),
    });
    try {
      await expect(removeValueSamples(db)).rejects.toThrow(/readonly/);
    } finally {
      await db.destroy();
    }
    expect(statisticsRows(path)).toEqual(before);
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
