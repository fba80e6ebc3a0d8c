import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { parseArgs, promisify } from "node:util";
import pg from "pg";
import { openDatabase } from "../src/db/database.js";
import { migrateToLatest } from "../src/db/migrate.js";
import type { DatasetShape } from "./dataset.js";
import type { LoadOptions, LoadResult } from "./load.js";
import { type ScenarioName, scenarioNames } from "./scenarios.js";
import { seed } from "./seed.js";

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
  },
});

const positiveInt = (name: string, text: string | undefined): number => {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer`);
  return n;
};
const licenses = positiveInt("licenses", values.licenses);
const shape: DatasetShape = {
  licenses,
  machines:
    values.machines === undefined
      ? Math.round(licenses * 1.5)
      : positiveInt("machines", values.machines),
};
const durationSeconds = positiveInt("duration", values.duration);
const connections = positiveInt("connections", values.connections);
const scenarios = (values.scenarios ?? "").split(",").filter((s): s is ScenarioName => {
  if (!(scenarioNames as readonly string[]).includes(s)) throw new Error(`unknown scenario ${s}`);
  return s !== "baseline";
});

const children = new Set<ChildProcess>();
const cleanups: Array<() => Promise<void> | void> = [];
let cleaningUp = false;

async function cleanup(): Promise<void> {
  if (cleaningUp) return;
  cleaningUp = true;
  for (const child of children) child.kill("SIGKILL");
  for (const step of cleanups.reverse()) {
    try {
      await step();
    } catch {
      // best effort: the run is over either way
    }
  }
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    log(`${signal}: stopping everything`);
    void cleanup().then(() => process.exit(130));
  });
}
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL");
});

function log(line: string): void {
  process.stderr.write(`[bench] ${line}\n`);
}

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

/** Starts a process and resolves with the first stdout/stderr match of `ready`. */
function startProcess(
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp,
): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const child = track(spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"] }));
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`not ready in 60 s: ${args.join(" ")}\n${output}`)),
      60_000,
    );
    const onData = (chunk: Buffer) => {
      // Keep only a tail: the server's logs are not the point, and a long run must not hold them.
      output = (output + chunk.toString()).slice(-20_000);
      const match = ready.exec(output);
      if (match) {
        clearTimeout(timer);
        child.stdout?.off("data", onData);
        child.stderr?.off("data", onData);
        child.stdout?.resume();
        child.stderr?.resume();
        resolve({ child, match });
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) =>
      reject(new Error(`exited with ${code}: ${args.join(" ")}\n${output}`)),
    );
  });
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Samples the process's resident set size every 100 ms; returns the peak in MiB. */
function sampleRss(pid: number): () => number {
  let peakKb = 0;
  const read = () => {
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      peakKb = Math.max(peakKb, kb);
    } catch {
      // process gone or not Linux: report what was seen
    }
  };
  read();
  const timer = setInterval(read, 100);
  return () => {
    clearInterval(timer);
    read();
    return Math.round(peakKb / 1024);
  };
}

const run = promisify(execFile);

/**
 * CPU seconds (user + system, all threads) a process has used so far, from /proc; null where
 * there is no /proc. CPU per request is far steadier than requests/s on a shared machine: it does
 * not depend on what else got the cores during the run.
 */
async function cpuSecondsOf(pid: number): Promise<number | null> {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the ")" that closes the command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return ticks / (await clockTicksPerSecond());
  } catch {
    return null;
  }
}

let ticksPerSecond: number | undefined;
async function clockTicksPerSecond(): Promise<number> {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number((await run("getconf", ["CLK_TCK"])).stdout.trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** Runs `load` and reports the server's CPU microseconds per request over it (null off Linux). */
async function withCpuPerRequest<T extends LoadResult>(
  pid: number,
  load: () => Promise<T>,
): Promise<T & { cpuUsPerRequest: number | null }> {
  const before = await cpuSecondsOf(pid);
  const result = await load();
  const after = await cpuSecondsOf(pid);
  const cpuUsPerRequest =
    before === null || after === null || result.totalRequests === 0
      ? null
      : Math.round(((after - before) * 1e6) / result.totalRequests);
  return { ...result, cpuUsPerRequest };
}

async function runLoad(
  url: string,
  scenario: ScenarioName,
  apiKey: string,
  seconds: number,
): Promise<LoadResult> {
  const options: LoadOptions = {
    url,
    scenario,
    durationSeconds: seconds,
    connections,
    shape,
    apiKey,
  };
  const child = run(
    process.execPath,
    [join(import.meta.dirname, "load.js"), JSON.stringify(options)],
    {
      maxBuffer: 1024 * 1024,
      timeout: (seconds + 60) * 1000,
    },
  );
  if (child.child) track(child.child);
  const { stdout } = await child;
  return JSON.parse(stdout) as LoadResult;
}

async function prepareDatabase(): Promise<string> {
  const adminUrl = process.env.BENCH_DATABASE_URL;
  if (!adminUrl) {
    const dir = mkdtempSync(join(os.tmpdir(), "shipkey-bench-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return `sqlite:${join(dir, "bench.db")}`;
  }
  const name = `shipkey_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  cleanups.push(async () => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    await client.query(`drop database if exists ${name} with (force)`);
    await client.end();
  });
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

type Measured = LoadResult & { cpuUsPerRequest: number | null };

interface ScenarioReport extends Measured {
  scenario: ScenarioName;
  ratioToBaseline: number;
  peakRssMiB: number;
}

async function main(): Promise<void> {
  const databaseUrl = await prepareDatabase();
  const dialect = databaseUrl.startsWith("sqlite:") ? "sqlite" : "postgres";
  log(
    `database: ${dialect}; seeding ${shape.licenses} licenses, ${shape.machines} active machines`,
  );
  const database = await openDatabase(databaseUrl);
  await migrateToLatest(database.db);
  const apiKey = await seed(database.db, shape, log);
  await database.close();

  const measureBaseline = async (): Promise<Measured> => {
    const baseline = await startProcess(
      [join(import.meta.dirname, "baseline-server.js")],
      process.env,
      /listening (\d+)/,
    );
    const result = await withCpuPerRequest(baseline.child.pid as number, () =>
      runLoad(`http://127.0.0.1:${baseline.match[1]}`, "baseline", apiKey, durationSeconds),
    );
    await stopProcess(baseline.child);
    return result;
  };

  log("baseline (bare node:http) ...");
  const baselineBefore = await measureBaseline();

  const serverEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    PORT: "0",
    HOST: "127.0.0.1",
    NODE_ENV: "production",
  };
  // BENCH_SERVER_NODE_ARGS="--cpu-prof" profiles the server (profile written in the cwd on exit).
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter((a) => a !== "");
  const server = await startProcess(
    [...nodeArgs, "dist/server.js"],
    serverEnv,
    /Server listening at (http:\/\/127\.0\.0\.1:\d+)/,
  );
  const serverUrl = server.match[1] as string;
  const pid = server.child.pid as number;
  log(`server ${serverUrl} (pid ${pid}); warming up`);
  await runLoad(serverUrl, "validate", apiKey, 2);

  const measured: Array<Measured & { scenario: ScenarioName; peakRssMiB: number }> = [];
  for (const scenario of scenarios) {
    log(`${scenario} ...`);
    const stopSampling = sampleRss(pid);
    const result = await withCpuPerRequest(pid, () =>
      runLoad(serverUrl, scenario, apiKey, durationSeconds),
    );
    measured.push({ ...result, scenario, peakRssMiB: stopSampling() });
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

  printTable(report.baseline.requestsPerSecond, baselineBefore, baselineAfter, reports);
  const resultsDir = process.env.BENCH_RESULTS_DIR ?? "bench/results";
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `${report.startedAt.replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  log(`results written to ${file}`);
}

function printTable(
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
    ],
    ["baseline (mean)", baselineRps.toFixed(0), "1.00", "", "", "", "", "", "", ""],
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
    ]),
  ];
  const widths =
    rows[0]?.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? "").length))) ?? [];
  for (const row of rows) {
    process.stdout.write(
      `${row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join("  ")}\n`,
    );
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
