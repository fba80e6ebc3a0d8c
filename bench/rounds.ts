import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import {
  alternate,
  baselineSide,
  type CompareOptions,
  report,
  type Side,
  seededSide,
  seedWith,
} from "./compare.js";
import type { DatasetShape } from "./dataset.js";
import { createDatabase, DatabaseCopies, freshDatabaseName } from "./postgres-databases.js";
import { log, onCleanup, startServer } from "./processes.js";

/**
 * `npm run bench -- --rounds N`: each scenario's ratio to the bare baseline with a 95 % interval,
 * for the targets written as ratios ("validate ≥ 0.6× baseline"). A full run measures the
 * baseline once before and once after all scenarios, minutes away from most of them, and one
 * such run is one sample: on a shared machine the same build gave validate 0.52×, 0.65× and
 * 0.73× in three (docs/performance-history.md, session 10). Here the baseline and the service
 * take turns of a few seconds within each round (compare.ts), and the rounds give the interval.
 * With `BENCH_DATABASE_URL` the service runs on PostgreSQL, each round on a fresh copy of the
 * seeded database.
 */
export interface RoundsOptions extends CompareOptions {
  shape: DatasetShape;
}

export async function runRounds(options: RoundsOptions): Promise<void> {
  const work = mkdtempSync(join(os.tmpdir(), "shipkey-bench-rounds-"));
  onCleanup(() => rmSync(work, { recursive: true, force: true }));
  const adminUrl = process.env.BENCH_DATABASE_URL;
  log(
    `seeding ${options.shape.licenses} licenses, ${options.shape.machines} active machines ` +
      `on ${adminUrl ? "PostgreSQL" : "SQLite"}`,
  );
  const service = adminUrl
    ? await postgresSide(adminUrl, options.shape)
    : await sqliteSide(join(work, "template.db"), options.shape);
  const sides: [Side, Side] = [baselineSide(service.apiKey, options.shape), service];
  report("rounds", await alternate(sides, options, work), options, {
    shape: options.shape,
    database: adminUrl ? "postgres" : "sqlite",
  });
}

async function sqliteSide(template: string, shape: DatasetShape): Promise<Side> {
  const root = process.cwd();
  const apiKey = await seedWith(root, `sqlite:${template}`, shape);
  return seededSide({ label: "shipkey", root, template, apiKey, shape });
}

/** The service on PostgreSQL: a seeded template database, and a copy of it per round. */
async function postgresSide(adminUrl: string, shape: DatasetShape): Promise<Side> {
  const template = freshDatabaseName();
  const apiKey = await seedWith(process.cwd(), await createDatabase(adminUrl, template), shape);
  const copies = new DatabaseCopies(adminUrl, template);
  await copies.prepareTemplate();
  return {
    label: "shipkey (PostgreSQL)",
    apiKey,
    shape,
    usesOtherProcesses: true,
    // The previous round's server is stopped by now (compare.ts stops both before a round).
    start: async () => startServer(await copies.next()),
  };
}
