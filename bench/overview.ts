import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { buildApp } from "../src/app.js";
import { openDatabase } from "../src/db/database.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { analyzeHotTables } from "../src/db/statistics.js";
import { createAdmin, createSession } from "../src/domain/admins/admins.js";
import { overview } from "../src/domain/overview/overview.js";
import { benchProducts, shapeFor } from "./dataset.js";
import { seed } from "./seed.js";

/**
 * `npm run bench:overview`: times the dashboard overview (/admin) on a large data set: the domain
 * function for one product and for all products, then the whole page through the app with a
 * signed-in admin. Prints the median and the slowest of --runs runs each.
 *
 *   npm run bench:overview -- [--licenses 1000000] [--runs 5] [--file /tmp/overview.db]
 *
 * SQLite: the seeded file is kept (default: shipkey-overview-<licenses>.db in the temporary
 * directory) and reused by later runs, which only migrate it. With BENCH_DATABASE_URL a fresh
 * PostgreSQL database on that server, analyzed as the service does at start, dropped at the end.
 */
const { values } = parseArgs({
  options: {
    licenses: { type: "string", default: "1000000" },
    runs: { type: "string", default: "5" },
    file: { type: "string" },
  },
});
const licenses = Number(values.licenses);
const runs = Number(values.runs);
if (!Number.isSafeInteger(licenses) || licenses <= 0 || !Number.isSafeInteger(runs) || runs <= 0) {
  throw new Error("--licenses and --runs must be positive integers");
}
const log = (line: string) => process.stderr.write(`[overview] ${line}\n`);

async function onServer(adminUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

async function time(label: string, work: () => Promise<unknown>): Promise<void> {
  const ms: number[] = [];
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    await work();
    ms.push(performance.now() - started);
  }
  ms.sort((a, b) => a - b);
  const median = ms[Math.floor(ms.length / 2)] ?? 0;
  log(`${label}: median ${median.toFixed(0)} ms, slowest ${(ms.at(-1) ?? 0).toFixed(0)} ms`);
}

async function main(): Promise<void> {
  const adminUrl = process.env.BENCH_DATABASE_URL || undefined;
  let url: string;
  let dropAtEnd: string | null = null;
  if (adminUrl) {
    dropAtEnd = `shipkey_overview_${randomBytes(4).toString("hex")}`;
    await onServer(adminUrl, `create database ${dropAtEnd}`);
    const target = new URL(adminUrl);
    target.pathname = `/${dropAtEnd}`;
    url = target.toString();
  } else {
    url = `sqlite:${values.file ?? join(os.tmpdir(), `shipkey-overview-${licenses}.db`)}`;
  }
  const fresh = adminUrl !== undefined || !existsSync(url.slice("sqlite:".length));
  const database = await openDatabase(url);
  try {
    await migrateToLatest(database.db);
    if (fresh) {
      log(`${database.dialect}: seeding ${licenses} licenses into ${adminUrl ? dropAtEnd : url}`);
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

    const product = benchProducts[0];
    await overview(database.db, product); // warm: the first run reads the file from disk
    await time(`overview(${product})`, () => overview(database.db, product));
    await time("overview(all products)", () => overview(database.db, null));

    const app = await buildApp({ database });
    const email = `overview-${randomBytes(4).toString("hex")}@example.com`;
    const admin = await createAdmin(database.db, { email, password: "a long enough password" });
    const { token } = await createSession(database.db, admin.id);
    const page = async (query: string) => {
      const response = await app.inject({
        method: "GET",
        url: `/admin${query}`,
        headers: { cookie: `shipkey_session=${token}` },
      });
      if (response.statusCode !== 200) throw new Error(`/admin${query}: ${response.statusCode}`);
    };
    await page(""); // warm: the app gets ready on its first request
    await time(`GET /admin?product=${product}`, () => page(`?product=${product}`));
    await time("GET /admin (all products)", () => page(""));
    await app.close();
  } finally {
    await database.close();
    if (adminUrl && dropAtEnd) await onServer(adminUrl, `drop database ${dropAtEnd} with (force)`);
  }
}

await main();
