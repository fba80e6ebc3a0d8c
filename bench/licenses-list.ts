import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { buildApp } from "../src/app.js";
import { createAdmin, createSession } from "../src/domain/admins/admins.js";
import { listLicenses } from "../src/domain/licenses/list-licenses.js";
import { benchProducts, licenseKeyFor, machineIdFor } from "./dataset.js";
import { openLargeDataset, timeRuns } from "./large-dataset.js";

/**
 * `npm run bench:licenses-list`: times the licenses list on the large data set of
 * `npm run bench:overview` (the same kept SQLite file, or a fresh PostgreSQL database with
 * BENCH_DATABASE_URL): the dashboard's page (/admin/licenses, in-process with a signed-in admin:
 * one page of 50 and the total) in each common view, then the domain function behind
 * `GET /api/admin/licenses` and the CSV export (cursor pages). Prints the median and the slowest of
 * --runs runs each; --only keeps the views whose label contains the text.
 *
 *   npm run bench:licenses-list -- [--licenses 1000000] [--runs 3] [--file PATH] [--only TEXT]
 */
const { values } = parseArgs({
  options: {
    licenses: { type: "string", default: "1000000" },
    runs: { type: "string", default: "3" },
    file: { type: "string" },
    only: { type: "string" },
  },
});
const licenses = Number(values.licenses);
const runs = Number(values.runs);
if (!Number.isSafeInteger(licenses) || licenses <= 0 || !Number.isSafeInteger(runs) || runs <= 0) {
  throw new Error("--licenses and --runs must be positive integers");
}
const log = (line: string) => process.stderr.write(`[licenses-list] ${line}\n`);
const product = benchProducts[0];
const middle = Math.floor(licenses / 2);

/** The dashboard's views: a label and the list's query string. */
const pageViews: Array<[string, string]> = [
  ["default (created, newest first)", ""],
  ["default, page 500", "?page=500"],
  ...(["created", "expires", "customer", "machines"] as const).flatMap((sort) =>
    (["desc", "asc"] as const).map((dir): [string, string] => [
      `product, ${sort} ${dir}`,
      `?product=${product}&sort=${sort}&dir=${dir}`,
    ]),
  ),
  ["product, page 500", `?product=${product}&page=500`],
  ["default, last page", `?page=${Math.ceil(licenses / 50)}`],
  ["product, machines desc, page 500", `?product=${product}&sort=machines&page=500`],
  ...(["expires", "customer", "machines"] as const).map((sort): [string, string] => [
    `all products, ${sort} desc`,
    `?sort=${sort}&dir=desc`,
  ]),
  ["status suspended", "?status=SUSPENDED"],
  ["product, status active", `?product=${product}&status=ACTIVE`],
  ["not expired", "?expired=no"],
  ["at machine limit", "?only=at-limit"],
  ["expiring within 30 days", "?only=expiring"],
  ["product, expiring within 30 days", `?product=${product}&only=expiring`],
  ["search: key prefix", `?q=${licenseKeyFor(middle).slice(0, 11)}`],
  ["search: one customer", `?q=${encodeURIComponent(`Customer ${middle} GmbH`)}`],
  ["search: many customers (gmbh)", "?q=gmbh"],
  ["machine id", `?machine=${machineIdFor(middle, 0)}`],
];

async function main(): Promise<void> {
  const { database, close } = await openLargeDataset(licenses, values.file, log);
  const results: Array<[string, number, number]> = [];
  const time = async (label: string, work: () => Promise<unknown>) => {
    if (values.only !== undefined && !label.includes(values.only)) return;
    const { median, slowest } = await timeRuns(runs, work);
    results.push([label, median, slowest]);
    log(`${label}: median ${median.toFixed(0)} ms, slowest ${slowest.toFixed(0)} ms`);
  };
  try {
    const app = await buildApp({ database });
    const email = `list-${randomBytes(4).toString("hex")}@example.com`;
    const admin = await createAdmin(database.db, { email, password: "a long enough password" });
    const { token } = await createSession(database.db, admin.id);
    const page = async (query: string) => {
      const response = await app.inject({
        method: "GET",
        url: `/admin/licenses${query}`,
        headers: { cookie: `shipkey_session=${token}` },
      });
      if (response.statusCode !== 200) throw new Error(`${query}: ${response.statusCode}`);
    };
    await page(""); // warm: the app gets ready, the file's pages are read from disk
    for (const [label, query] of pageViews)
      await time(`GET /admin/licenses: ${label}`, () => page(query));

    const db = database.db;
    await time("API list, product, 100", () => listLicenses(db, { product, limit: 100 }));
    const first = await listLicenses(db, { product, limit: 100 });
    const cursor = first.nextCursor ?? undefined;
    await time("API list, product, next 100", () =>
      listLicenses(db, { product, limit: 100, cursor }),
    );
    await time("API list, all, 100", () => listLicenses(db, { limit: 100 }));
    await time("CSV batch (500), product", () => listLicenses(db, { product, limit: 500 }));
    await app.close();
  } finally {
    await close();
  }
  process.stdout.write(
    `${JSON.stringify({ dialect: database.dialect, licenses, runs, results })}\n`,
  );
}

await main();
