import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { buildApp } from "../src/app.js";
import { createAdmin, createSession } from "../src/domain/admins/admins.js";
import { overview } from "../src/domain/overview/overview.js";
import { benchProducts } from "./dataset.js";
import { openLargeDataset, timeRuns } from "./large-dataset.js";

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

async function time(label: string, work: () => Promise<unknown>): Promise<void> {
  const { median, slowest } = await timeRuns(runs, work);
  log(`${label}: median ${median.toFixed(0)} ms, slowest ${slowest.toFixed(0)} ms`);
}

async function main(): Promise<void> {
  const { database, close } = await openLargeDataset(licenses, values.file, log);
  try {
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
    await close();
  }
}

await main();
