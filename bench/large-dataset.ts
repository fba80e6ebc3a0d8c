import { existsSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { type Database, openDatabase } from "../src/db/database.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { analyzeHotTables } from "../src/db/statistics.js";
import { shapeFor } from "./dataset.js";
import { newBenchDatabase } from "./postgres.js";
import { seed } from "./seed.js";

/**
 * The large data set the dashboard benchmarks (overview.ts, licenses-list.ts) read. SQLite: a
 * seeded file kept for later runs (default: shipkey-overview-<licenses>.db in the temporary
 * directory), which they only migrate. With BENCH_DATABASE_URL: a fresh PostgreSQL database on
 * that server, analyzed as the service does at start, dropped by `close`.
 */
export async function openLargeDataset(
  licenses: number,
  file: string | undefined,
  log: (line: string) => void,
): Promise<{ database: Database; close: () => Promise<void> }> {
  const adminUrl = process.env.BENCH_DATABASE_URL || undefined;
  let url: string;
  let created: Awaited<ReturnType<typeof newBenchDatabase>> | null = null;
  if (adminUrl) {
    created = await newBenchDatabase(adminUrl);
    url = created.url;
  } else {
    url = `sqlite:${file ?? join(os.tmpdir(), `shipkey-overview-${licenses}.db`)}`;
  }
  const fresh = adminUrl !== undefined || !existsSync(url.slice("sqlite:".length));
  const database = await openDatabase(url);
  const close = async () => {
    await database.close();
    await created?.drop();
  };
  try {
    await migrateToLatest(database.db);
    if (fresh) {
      log(`${database.dialect}: seeding ${licenses} licenses into ${created?.name ?? url}`);
      await seed(database.db, database.dialect, shapeFor(licenses), log);
    } else {
      const row = await database.db
        .selectFrom("licenses")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .executeTakeFirst();
      if (Number(row?.n ?? 0) < licenses) {
        throw new Error(
          `${url} holds fewer than ${licenses} licenses (a seed cut short?): delete it`,
        );
      }
      log(`reusing ${url}`);
    }
    if (database.dialect === "postgres") await analyzeHotTables(database.db, true);
  } catch (err) {
    await close();
    throw err;
  }
  return { database, close };
}

/** Times `work` `runs` times; the median and the slowest, in ms. */
export async function timeRuns(
  runs: number,
  work: () => Promise<unknown>,
): Promise<{ median: number; slowest: number }> {
  const ms: number[] = [];
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    await work();
    ms.push(performance.now() - started);
  }
  ms.sort((a, b) => a - b);
  return { median: ms[Math.floor(ms.length / 2)] ?? 0, slowest: ms.at(-1) ?? 0 };
}
