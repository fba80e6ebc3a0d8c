import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { DatasetShape } from "./dataset.js";
import {
  log,
  failOnServerFaults,
  measureServer,
  runCommand,
  type ServerRun,
  runLoad,
  startServer,
  stopProcess,
} from "./processes.js";
import type { ScenarioName } from "./scenarios.js";
import { printTable } from "./table.js";

/**
 * Two sides of one comparison, measured in the same run: `--ab` (two builds on the same data) and
 * `--scale` (one build on two data sizes). Each side owns a seeded database; the two servers take
 * turns, one at a time, in the order A B B A A B …, each from a fresh copy of its side's database
 * after a 2 s warm-up, so a drift of the machine during the run weighs on both alike.
 *
 * The figures to read are the change in requests/s and in the event loop's CPU per request: the
 * event loop is the server's bottleneck, and its CPU time does not depend on how the cores were
 * shared during a run, which moves requests/s by ±20 % on a shared machine (docs/performance.md).
 */
export interface CompareOptions {
  rounds: number;
  scenarios: ScenarioName[];
  durationSeconds: number;
  connections: number;
}

export interface Side {
  label: string;
  /** A checkout holding dist/ and dist-bench/. */
  root: string;
  /** The seeded database every run of this side starts from. */
  template: string;
  apiKey: string;
  shape: DatasetShape;
}

export type SideRun = ServerRun;

export interface SideResult {
  scenario: ScenarioName;
  side: string;
  runs: SideRun[];
}

/** Seeds `file` with the data set, using the migrations and seed code of the build at `root`. */
export async function seedWith(root: string, file: string, shape: DatasetShape): Promise<string> {
  const module = (path: string) => pathToFileURL(join(root, path)).href;
  const script = `
    const { openDatabase } = await import(${JSON.stringify(module("dist/db/database.js"))});
    const { migrateToLatest } = await import(${JSON.stringify(module("dist/db/migrate.js"))});
    const { seed } = await import(${JSON.stringify(module("dist-bench/bench/seed.js"))});
    const database = await openDatabase(${JSON.stringify(`sqlite:${file}`)});
    await migrateToLatest(database.db);
    const apiKey = await seed(database.db, ${JSON.stringify(shape)}, () => {});
    await database.close();
    process.stdout.write(JSON.stringify({ apiKey }));`;
  const stdout = await runCommand(process.execPath, ["--input-type=module", "-e", script], {
    cwd: root,
  });
  return (JSON.parse(stdout) as { apiKey: string }).apiKey;
}

/** Runs every scenario on both sides, alternating, `rounds` times each. */
export async function alternate(
  sides: [Side, Side],
  options: CompareOptions,
  work: string,
): Promise<SideResult[]> {
  const results: SideResult[] = [];
  for (const scenario of options.scenarios) {
    const runs = sides.map((side) => ({ scenario, side: side.label, runs: [] as SideRun[] }));
    for (let round = 0; round < options.rounds; round++) {
      // A B, then B A: a linear drift of the machine adds the same to both sides.
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const i of order) {
        const side = sides[i] as Side;
        log(`${scenario}, round ${round + 1}/${options.rounds}: ${side.label}`);
        runs[i]?.runs.push(await measure(side, scenario, options, join(work, "run.db")));
      }
    }
    results.push(...runs);
  }
  return results;
}

/** One run: a fresh copy of the side's database, its server, a warm-up, then the scenario. */
async function measure(
  side: Side,
  scenario: ScenarioName,
  options: CompareOptions,
  file: string,
): Promise<SideRun> {
  // Left by the previous run: its shared memory and its last-seen log (its own file since
  // migration 0007), which starts empty in every run.
  for (const suffix of ["-shm", "-last-seen", "-last-seen-wal", "-last-seen-shm"]) {
    rmSync(`${file}${suffix}`, { force: true });
  }
  for (const suffix of ["", "-wal"]) {
    rmSync(`${file}${suffix}`, { force: true });
    if (!existsSync(`${side.template}${suffix}`)) continue;
    copyFileSync(`${side.template}${suffix}`, `${file}${suffix}`);
    // Written back now, not by the kernel's flusher threads during the run: at 1 M licenses that
    // is ~1.1 GB, whose writeback would share the two cores with the server.
    const fd = openSync(`${file}${suffix}`, "r+");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
  const server = await startServer(`sqlite:${file}`, { cwd: side.root });
  try {
    const load = (seconds: number) => ({
      scenario,
      apiKey: side.apiKey,
      seconds,
      connections: options.connections,
      shape: side.shape,
    });
    await runLoad(server.url, load(2));
    return await measureServer(server, load(options.durationSeconds));
  } finally {
    await stopProcess(server.child);
  }
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const spread = (values: number[], digits: number) =>
  `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;
const percent = (from: number, to: number) => `${(((to - from) / from) * 100).toFixed(1)} %`;

/**
 * Prints both sides of each scenario and the change from the first to the second, and writes the
 * JSON report (`bench/results/<timestamp>-<kind>.json`) with `extra` merged in.
 */
export function report(
  kind: "ab" | "scale",
  results: SideResult[],
  options: CompareOptions,
  extra: { baselineRequestsPerSecond?: number } & Record<string, unknown> = {},
): void {
  const baseline = extra.baselineRequestsPerSecond;
  const figures = (result: SideResult) => ({
    rps: result.runs.map((run) => run.requestsPerSecond),
    loop: result.runs.map((run) => run.eventLoopUsPerRequest ?? Number.NaN),
    process: result.runs.map((run) => run.cpuUsPerRequest ?? Number.NaN),
    reads: result.runs.map((run) => run.eventLoopReadsPerRequest ?? Number.NaN),
    rss: result.runs.map((run) => run.peakRssMiB),
  });
  const rows = [
    [
      "scenario",
      kind === "ab" ? "build" : "data set",
      "req/s (mean)",
      "req/s (range)",
      ...(baseline === undefined ? [] : ["× baseline"]),
      "loop µs/req (mean)",
      "loop µs/req (range)",
      "CPU µs/req (mean)",
      "loop reads/req (mean)",
      "peak RSS MiB",
      "non-2xx",
    ],
  ];
  const summary: Array<Record<string, unknown>> = [];
  for (const scenario of options.scenarios) {
    const [first, second] = results.filter((result) => result.scenario === scenario);
    if (!first || !second) continue;
    for (const result of [first, second]) {
      const f = figures(result);
      rows.push([
        scenario,
        result.side,
        mean(f.rps).toFixed(0),
        spread(f.rps, 0),
        ...(baseline === undefined ? [] : [(mean(f.rps) / baseline).toFixed(2)]),
        mean(f.loop).toFixed(1),
        spread(f.loop, 1),
        mean(f.process).toFixed(1),
        mean(f.reads).toFixed(2),
        String(Math.max(...f.rss)),
        String(result.runs.reduce((n, run) => n + run.non2xx + run.errors, 0)),
      ]);
    }
    const [a, b] = [figures(first), figures(second)];
    rows.push([
      "",
      "change",
      percent(mean(a.rps), mean(b.rps)),
      "",
      ...(baseline === undefined ? [] : [""]),
      percent(mean(a.loop), mean(b.loop)),
      "",
      percent(mean(a.process), mean(b.process)),
      percent(mean(a.reads), mean(b.reads)),
      "",
      "",
    ]);
    summary.push({
      scenario,
      requestsPerSecondChange: mean(b.rps) / mean(a.rps) - 1,
      eventLoopUsPerRequestChange: mean(b.loop) / mean(a.loop) - 1,
    });
  }
  printTable(rows);
  const cpus = os.cpus();
  const startedAt = new Date().toISOString();
  const resultsDir = process.env.BENCH_RESULTS_DIR ?? "bench/results";
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `${startedAt.replace(/[:.]/g, "-")}-${kind}.json`);
  const document = {
    startedAt,
    machine: { cpu: cpus[0]?.model ?? "unknown", cores: cpus.length },
    node: process.version,
    options,
    ...extra,
    summary,
    results,
  };
  writeFileSync(file, `${JSON.stringify(document, null, 2)}\n`);
  log(`results written to ${file}`);
  failOnServerFaults(results.flatMap((result) => result.runs));
}
