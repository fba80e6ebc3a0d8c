import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { openDatabase } from "../src/db/database.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { shapeFor } from "./dataset.js";
import type { LoadResult } from "./load.js";
import { cleanup, log, onCleanup, runLoad, sampleRss, startServer } from "./processes.js";
import { type ScenarioName, scenarioNames } from "./scenarios.js";
import { newBenchDatabase } from "./postgres.js";
import { seed } from "./seed.js";

/**
 * `npm run bench`: seeds a fresh database, starts the real service (`node dist/server.js`) and a
 * bare node:http baseline, and in each round runs every scenario first against the baseline, then
 * against the service, from a separate autocannon process on loopback. Prints one table of means
 * over the rounds, with a verdict where a target applies, and writes the JSON to bench/results/.
 *
 *   npm run bench -- [--licenses 100000] [--rounds 8] [--duration 5] [--connections 50]
 *                    [--scenarios validate,validate-signed,activate-deactivate,publish,…]
 *
 * SQLite in a temporary directory by default; with BENCH_DATABASE_URL=postgres://… a fresh
 * database on that server, dropped at the end. To compare sizes (validate at 1 M licenses within
 * 15 % of 10 k), run with --licenses 10000 and --licenses 1000000 and compare validate's
 * "× baseline". Everything started is stopped on exit and on Ctrl-C.
 */
const { values } = parseArgs({
  options: {
    licenses: { type: "string", default: "100000" },
    rounds: { type: "string", default: "8" },
    duration: { type: "string", default: "5" },
    connections: { type: "string", default: "50" },
    scenarios: { type: "string", default: scenarioNames.join(",") },
  },
});
const positiveInt = (name: keyof typeof values): number => {
  const n = Number(values[name]);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer`);
  return n;
};
const shape = shapeFor(positiveInt("licenses"));
const rounds = positiveInt("rounds");
const durationSeconds = positiveInt("duration");
const connections = positiveInt("connections");
const scenarios = (values.scenarios ?? "").split(",").map((name) => {
  const known = scenarioNames.find((s) => s === name);
  if (!known) throw new Error(`unknown scenario "${name}"; known: ${scenarioNames.join(", ")}`);
  return known;
});

/** A fresh database: a SQLite file in a temporary directory, or a new PostgreSQL database. */
async function freshDatabase(adminUrl: string | undefined): Promise<string> {
  if (!adminUrl) {
    const dir = mkdtempSync(join(os.tmpdir(), "shipkey-bench-"));
    onCleanup(() => rmSync(dir, { recursive: true, force: true }));
    return `sqlite:${join(dir, "bench.db")}`;
  }
  const database = await newBenchDatabase(adminUrl);
  onCleanup(database.drop);
  return database.url;
}

interface Turns {
  service: LoadResult[];
  baseline: LoadResult[];
  peakRssMB: number | null;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(xs.length, 1);
const rps = (runs: LoadResult[]) => mean(runs.map((r) => r.requestsPerSecond));
const rssLimitMB = 250;
const unspendable = "999999999/24h";

async function main(): Promise<void> {
  const startedAt = new Date().toISOString();
  const databaseUrl = await freshDatabase(process.env.BENCH_DATABASE_URL || undefined);
  const database = await openDatabase(databaseUrl);
  const dialect = database.dialect;
  log(`${dialect}: seeding ${shape.licenses} licenses, ${shape.machines} active machines`);
  await migrateToLatest(database.db);
  const apiKey = await seed(database.db, dialect, shape, log);
  await database.close();

  const baseline = await startServer([join(import.meta.dirname, "baseline-server.js")]);
  const service = await startServer([join(import.meta.dirname, "../../dist/server.js")], {
    DATABASE_URL: databaseUrl,
    // A fresh database every run: a fresh master key (PostgreSQL requires one to be set).
    SHIPKEY_MASTER_KEY: process.env.SHIPKEY_MASTER_KEY || randomBytes(32).toString("base64"),
    LOG_LEVEL: "warn",
    // The webhook scenario's receiver listens on loopback.
    WEBHOOKS_ALLOW_PRIVATE: "true",
    NODE_ENV: "production",
    // The rate limiter runs on every request, as in production, with budgets the load never
    // spends: the figures include its cost.
    RATE_LIMIT_LICENSE: unspendable,
    RATE_LIMIT_UPDATES: unspendable,
    RATE_LIMIT_UNKNOWN_KEY: unspendable,
    RATE_LIMIT_PUBLISH: unspendable,
    RATE_LIMIT_ADMIN: unspendable,
  });
  log(`service ${service.url} (pid ${service.child.pid}), baseline ${baseline.url}`);
  const receiver = await startWebhookReceiver();
  const turn = async (url: string, scenario: ScenarioName, seconds = durationSeconds) => {
    const endpoint =
      scenario === "activate-webhook" ? await subscribe(url, apiKey, receiver.url) : null;
    try {
      return await runLoad({ url, scenario, shape, apiKey, durationSeconds: seconds, connections });
    } finally {
      if (endpoint) await endpoint.remove();
    }
  };
  log("warming up");
  await turn(baseline.url, "baseline", Math.min(2, durationSeconds));
  await turn(service.url, "validate", Math.min(2, durationSeconds));

  const results = new Map<ScenarioName, Turns>(
    scenarios.map((s) => [s, { service: [], baseline: [], peakRssMB: null }]),
  );
  for (let round = 1; round <= rounds; round++) {
    for (const [scenario, turns] of results) {
      log(`round ${round}/${rounds}: ${scenario}`);
      turns.baseline.push(await turn(baseline.url, "baseline"));
      const stopSampling = sampleRss(service.child.pid);
      turns.service.push(await turn(service.url, scenario));
      const peak = stopSampling();
      if (peak !== null) turns.peakRssMB = Math.max(turns.peakRssMB ?? 0, peak);
    }
  }

  // The targets: validate on both databases; activate + deactivate, publish and the Tauri
  // update check (also with a rollout in progress) on SQLite.
  const ratioTargets: Partial<Record<ScenarioName, number>> =
    dialect === "sqlite"
      ? {
          validate: 0.5,
          "validate-signed": 0.3,
          "activate-deactivate": 0.25,
          publish: 0.1,
          "update-check": 0.4,
          "update-check-rollout": 0.4,
        }
      : { validate: 0.25 };
  const pair = results.get("validate-2");
  // Hostile input costs no more than twice normal input: its rate is at least half.
  const pairedTargets: Partial<Record<ScenarioName, [ScenarioName, number]>> = {
    "activate-webhook": ["activate-deactivate", 0.8],
    "public-hostile": ["public-normal", 0.5],
    "appcast-worst-notes": ["appcast-plain-notes", 0.5],
  };
  const pairedVerdict = (scenario: ScenarioName, turns: Turns): [string, boolean | null] => {
    const [other, share] = pairedTargets[scenario] ?? [];
    const against = other === undefined ? undefined : results.get(other);
    if (other === undefined || share === undefined || against === undefined) return ["", null];
    return [`≥ ${share.toFixed(2)}× ${other}`, rps(turns.service) >= share * rps(against.service)];
  };
  const rows = [...results].map(([scenario, turns]) => {
    const ratio = rps(turns.service) / rps(turns.baseline);
    const limit = ratioTargets[scenario];
    const [target, met] =
      limit !== undefined
        ? [`≥ ${limit.toFixed(2)}× baseline`, ratio >= limit]
        : scenario === "validate-1000" && pair
          ? ["≥ 0.80× validate-2", rps(turns.service) >= 0.8 * rps(pair.service)]
          : pairedVerdict(scenario, turns);
    return {
      scenario,
      serviceRequestsPerSecond: Math.round(rps(turns.service)),
      baselineRequestsPerSecond: Math.round(rps(turns.baseline)),
      ratioToBaseline: Number(ratio.toFixed(3)),
      p99MsWorst: Math.max(...turns.service.map((r) => r.latencyMs.p99)),
      maxMs: Math.max(...turns.service.map((r) => r.latencyMs.max)),
      peakRssMB: turns.peakRssMB,
      errors: [...turns.service, ...turns.baseline].reduce((n, r) => n + r.errors, 0),
      target,
      verdict: met === null ? "" : met ? "ok" : "MISS",
      rounds: { service: turns.service, baseline: turns.baseline },
    };
  });

  const cpus = os.cpus();
  const report = {
    startedAt,
    machine: { cpu: cpus[0]?.model ?? "unknown", cores: cpus.length, platform: os.platform() },
    node: process.version,
    database: dialect,
    postgresPoolSize: dialect === "postgres" ? Number(process.env.DATABASE_POOL_SIZE || 10) : null,
    dataset: { ...shape, plus: "one license with 1,000 machines, one with 2" },
    rounds,
    durationSeconds,
    connections,
    serverFaults: service.faults,
    scenarios: rows,
  };

  process.stdout.write(
    `\nShipkey on ${dialect}, ${shape.licenses} licenses; ${rounds} round(s) of ${durationSeconds} s ` +
      `per turn, ${connections} connections; ${report.machine.cores} × ${report.machine.cpu}\n\n`,
  );
  const header = `scenario|service req/s|baseline req/s|× baseline|p99 ms (worst)|max ms|peak RSS MB (≤ ${rssLimitMB})|errors|target|verdict`;
  printTable([
    header.split("|"),
    ...rows.map((r) => [
      r.scenario,
      `${r.serviceRequestsPerSecond}`,
      `${r.baselineRequestsPerSecond}`,
      r.ratioToBaseline.toFixed(2),
      `${r.p99MsWorst}`,
      `${r.maxMs}`,
      r.peakRssMB === null ? "n/a" : `${r.peakRssMB} ${r.peakRssMB <= rssLimitMB ? "ok" : "MISS"}`,
      `${r.errors}`,
      r.target,
      r.verdict,
    ]),
  ]);

  const dir = process.env.BENCH_RESULTS_DIR || resolve(import.meta.dirname, "../../bench/results");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${report.startedAt.replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  log(`results written to ${file}`);
  if (rows.some((r) => r.errors > 0) || service.faults.length > 0) {
    log(`requests failed or the service logged faults: the figures do not hold`);
    for (const line of service.faults.slice(0, 5)) log(`  ${line}`);
    process.exitCode = 1;
  }
}

/** The first column left-aligned, the others right-aligned. */
function printTable(rows: string[][]): void {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? "").length)));
  for (const row of rows) {
    const cells = row.map((cell, i) =>
      i === 0 ? cell.padEnd(widths?.[i] ?? 0) : cell.padStart(widths?.[i] ?? 0),
    );
    process.stdout.write(`${cells.join("  ")}\n`);
  }
}

try {
  await main();
} catch (err) {
  log(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
} finally {
  await cleanup();
}

/** The webhook scenario's receiver: answers every delivery 204 at once. */
async function startWebhookReceiver(): Promise<{ url: string }> {
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => response.writeHead(204).end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onCleanup(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks` };
}

/** An endpoint subscribed to both events of the activate + deactivate pairs, for one turn. */
async function subscribe(
  service: string,
  apiKey: string,
  url: string,
): Promise<{ remove(): Promise<void> }> {
  const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json" };
  const created = await fetch(`${service}/api/admin/webhook-endpoints`, {
    method: "POST",
    headers,
    body: JSON.stringify({ url, events: ["machine.activated", "machine.deactivated"] }),
  });
  if (created.status !== 201) throw new Error(`creating the bench endpoint: ${created.status}`);
  const { id } = (await created.json()) as { id: string };
  return {
    remove: async () => {
      const deleted = await fetch(`${service}/api/admin/webhook-endpoints/${id}`, {
        method: "DELETE",
        headers: { authorization: headers.authorization },
      });
      if (deleted.status !== 200) throw new Error(`deleting the bench endpoint: ${deleted.status}`);
    },
  };
}
