import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openDatabase } from "../src/db/database.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { runAb } from "./ab.js";
import type { DatasetShape } from "./dataset.js";
import { createDatabase, freshDatabaseName } from "./postgres-databases.js";
import {
  checkPinning,
  cleanup,
  failOnServerFaults,
  log,
  type Measured,
  measureBaselineServer,
  measureServer,
  onCleanup,
  runLoad,
  type ServerRun,
  startServer,
  stopProcess,
} from "./processes.js";
import { type ScenarioName, scenarioNames } from "./scenarios.js";
import { runRounds } from "./rounds.js";
import { runScale } from "./scale.js";
import { seed } from "./seed.js";
import { printTable as printRows } from "./table.js";

/**
 * `npm run bench`: seeds a fresh database, starts the real service as `npm start` runs it, and
 * drives each scenario from a separate load-generator process on loopback, next to a bare
 * node:http baseline measured in the same run. Everything it starts is stopped on exit or Ctrl-C.
 */
const { values } = parseArgs({
  options: {
    licenses: { type: "string", default: "100000" },
    machines: { type: "string" },
    duration: { type: "string", default: "10" },
    connections: { type: "string", default: "50" },
    scenarios: { type: "string", default: scenarioNames.filter((s) => s !== "baseline").join(",") },
    ab: { type: "string" },
    scale: { type: "string" },
    rounds: { type: "string" },
    slices: { type: "string" },
  },
});

const positiveInt = (name: string, text: string | undefined): number => {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer`);
  return n;
};
const shapeOf = (licenses: number): DatasetShape => ({
  licenses,
  machines:
    values.machines === undefined
      ? Math.round(licenses * 1.5)
      : positiveInt("machines", values.machines),
});
const shape = shapeOf(positiveInt("licenses", values.licenses));
const durationSeconds = positiveInt("duration", values.duration);
const connections = positiveInt("connections", values.connections);
const scenarios = (values.scenarios ?? "").split(",").filter((s): s is ScenarioName => {
  if (!(scenarioNames as readonly string[]).includes(s)) throw new Error(`unknown scenario ${s}`);
  return s !== "baseline";
});
if (scenarios.length === 0) throw new Error("--scenarios names no scenario to run");

const load = (scenario: ScenarioName, apiKey: string, seconds: number) => ({
  scenario,
  apiKey,
  seconds,
  connections,
  shape,
});

async function prepareDatabase(): Promise<string> {
  const adminUrl = process.env.BENCH_DATABASE_URL;
  if (!adminUrl) {
    const dir = mkdtempSync(join(os.tmpdir(), "shipkey-bench-"));
    onCleanup(() => rmSync(dir, { recursive: true, force: true }));
    return `sqlite:${join(dir, "bench.db")}`;
  }
  return createDatabase(adminUrl, freshDatabaseName());
}

interface ScenarioReport extends ServerRun {
  scenario: ScenarioName;
  ratioToBaseline: number;
}

async function main(): Promise<void> {
  const databaseUrl = await prepareDatabase();
  const dialect = databaseUrl.startsWith("sqlite:") ? "sqlite" : "postgres";
  // The SQLite file's path, never a PostgreSQL URL (it may hold a password).
  const where = dialect === "sqlite" ? ` at ${databaseUrl.slice("sqlite:".length)}` : "";
  log(
    `database: ${dialect}${where}; seeding ${shape.licenses} licenses, ${shape.machines} active machines`,
  );
  const database = await openDatabase(databaseUrl);
  await migrateToLatest(database.db);
  const apiKey = await seed(database.db, shape, log);
  await database.close();

  const measureBaseline = () => measureBaselineServer(load("baseline", apiKey, durationSeconds));

  log("baseline (bare node:http) ...");
  const baselineBefore = await measureBaseline();

  const server = await startServer(databaseUrl);
  log(`server ${server.url} (pid ${server.pid}); warming up`);
  await runLoad(server.url, load("validate", apiKey, 2));

  const measured: Array<ServerRun & { scenario: ScenarioName }> = [];
  for (const scenario of scenarios) {
    log(`${scenario} ...`);
    const result = await measureServer(server, load(scenario, apiKey, durationSeconds));
    measured.push({ ...result, scenario });
  }
  await stopProcess(server.child);

  log("baseline again (drift check) ...");
  const baselineAfter = await measureBaseline();
  const baselineRps = (baselineBefore.requestsPerSecond + baselineAfter.requestsPerSecond) / 2;
  const reports: ScenarioReport[] = measured.map((m) => ({
    ...m,
    ratioToBaseline: m.requestsPerSecond / baselineRps,
  }));

  const cpus = os.cpus();
  const report = {
    startedAt: new Date().toISOString(),
    machine: {
      cpu: cpus[0]?.model ?? "unknown",
      cores: cpus.length,
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      platform: `${os.platform()} ${os.release()}`,
    },
    node: process.version,
    database: dialect,
    dataset: shape,
    durationSeconds,
    connections,
    baseline: { before: baselineBefore, after: baselineAfter, requestsPerSecond: baselineRps },
    scenarios: reports,
  };

  printReport(report.baseline.requestsPerSecond, baselineBefore, baselineAfter, reports);
  const resultsDir = process.env.BENCH_RESULTS_DIR ?? "bench/results";
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `${report.startedAt.replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  log(`results written to ${file}`);
  failOnServerFaults(reports);
}

function printReport(
  baselineRps: number,
  before: Measured,
  after: Measured,
  reports: ScenarioReport[],
): void {
  const rows = [
    [
      "scenario",
      "req/s",
      "× baseline",
      "p50 ms",
      "p99 ms",
      "max ms",
      "non-2xx",
      "errors",
      "peak RSS MiB",
      "CPU µs/req",
      "loop µs/req",
      "loop reads/req",
    ],
    ["baseline (mean)", baselineRps.toFixed(0), "1.00", "", "", "", "", "", "", "", "", ""],
    [
      "  before",
      before.requestsPerSecond.toFixed(0),
      "",
      `${before.latencyMs.p50}`,
      `${before.latencyMs.p99}`,
      `${before.latencyMs.max}`,
      `${before.non2xx}`,
      `${before.errors}`,
      "",
      `${before.cpuUsPerRequest ?? ""}`,
      `${before.eventLoopUsPerRequest ?? ""}`,
      `${before.eventLoopReadsPerRequest ?? ""}`,
    ],
    [
      "  after",
      after.requestsPerSecond.toFixed(0),
      "",
      `${after.latencyMs.p50}`,
      `${after.latencyMs.p99}`,
      `${after.latencyMs.max}`,
      `${after.non2xx}`,
      `${after.errors}`,
      "",
      `${after.cpuUsPerRequest ?? ""}`,
      `${after.eventLoopUsPerRequest ?? ""}`,
      `${after.eventLoopReadsPerRequest ?? ""}`,
    ],
    ...reports.map((r) => [
      r.scenario,
      r.requestsPerSecond.toFixed(0),
      r.ratioToBaseline.toFixed(2),
      `${r.latencyMs.p50}`,
      `${r.latencyMs.p99}`,
      `${r.latencyMs.max}`,
      `${r.non2xx}`,
      `${r.errors + r.timeouts}`,
      `${r.peakRssMiB}`,
      `${r.cpuUsPerRequest ?? ""}`,
      `${r.eventLoopUsPerRequest ?? ""}`,
      `${r.eventLoopReadsPerRequest ?? ""}`,
    ]),
  ];
  printRows(rows);
}

try {
  // A CPU list that taskset would refuse stops the run here, not after minutes of seeding.
  checkPinning();
  const onSqliteOnly = () => {
    if (process.env.BENCH_DATABASE_URL) throw new Error("--ab and --scale run on SQLite only");
  };
  const compare = () => {
    // Turns of 2 s by default (1 s for an odd --duration). Turns last whole seconds: autocannon
    // stops at its next one-second tick, so a 2.5 s turn would run for 3.
    const slices =
      values.slices === undefined
        ? durationSeconds % 2 === 0
          ? durationSeconds / 2
          : durationSeconds
        : positiveInt("slices", values.slices);
    if (durationSeconds % slices !== 0) {
      throw new Error("--slices must divide --duration (turns last whole seconds)");
    }
    const rounds = values.rounds === undefined ? 4 : positiveInt("rounds", values.rounds);
    if (rounds < 2) log("warning: one round gives no interval");
    else if (rounds % 2 === 1 && slices % 2 === 1) {
      log("warning: an odd number of rounds leaves the order of the sides unbalanced");
    }
    return {
      rounds,
      slices,
      scenarios,
      durationSeconds,
      connections,
    };
  };
  if (values.ab !== undefined && values.scale !== undefined) {
    throw new Error("--ab and --scale cannot be combined");
  } else if (values.ab !== undefined) {
    onSqliteOnly();
    await runAb({ ...compare(), ref: values.ab, shape });
  } else if (values.scale !== undefined) {
    onSqliteOnly();
    // Each size gets its own 1.5 machines per license; one --machines for both would not.
    if (values.machines !== undefined) throw new Error("--scale sets the machines per size");
    const sizes = values.scale.split(",").map((n) => positiveInt("scale", n));
    const [small, large] = sizes;
    if (sizes.length !== 2 || small === undefined || large === undefined) {
      throw new Error("--scale takes two license counts, e.g. --scale 10000,1000000");
    }
    await runScale({ ...compare(), shapes: [shapeOf(small), shapeOf(large)] });
  } else if (values.rounds !== undefined) {
    await runRounds({ ...compare(), shape });
  } else if (values.slices !== undefined) {
    throw new Error("--slices takes effect with --rounds, --ab or --scale only");
  } else {
    await main();
  }
} catch (err) {
  log(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
} finally {
  await cleanup();
}
