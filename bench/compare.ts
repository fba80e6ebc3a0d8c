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
  type LoadRun,
  runCommand,
  type ServerRun,
  runLoad,
  type StartedServer,
  startBaselineServer,
  startServer,
  stopProcess,
  takeFaults,
} from "./processes.js";
import { waitUntilIdle } from "./proc-stat.js";
import type { ScenarioName } from "./scenarios.js";
import { changesPerRound, type Estimate, meanWithInterval } from "./round-changes.js";
import { printTable } from "./table.js";

/**
 * Two sides of one comparison, measured in the same run: `--ab` (two builds on the same data),
 * `--scale` (one build on two data sizes) and `--rounds` (the bare baseline against the service).
 * A round starts both servers, each service on a fresh copy of its side's seeded database, warms
 * both up (2 s each), then gives them `slices` turns apiece in the order A B B A A B …, each turn
 * `durationSeconds / slices` long, and stops both. Before each turn both servers are left to
 * finish what they deferred (waitUntilIdle), so it is not done on the next turn's time. Turns of a few seconds put the two sides within seconds of each other all along, so
 * a drift of the machine weighs on both alike; rounds repeat the whole (fresh processes, fresh
 * copies), and their spread is what the interval in the report is computed from.
 *
 * The figures to read are the change in requests/s and in the event loop's CPU per request: the
 * event loop is the server's bottleneck, and its CPU time does not depend on how the cores were
 * shared during a run, which moves requests/s by ±20 % on a shared machine (docs/performance.md).
 */
export interface CompareOptions {
  rounds: number;
  /** Turns per side in each round. */
  slices: number;
  scenarios: ScenarioName[];
  /** Measured seconds per side in each round, split over its turns. */
  durationSeconds: number;
  connections: number;
}

/** One side of a comparison: what its load is, and how a round starts a fresh server of it. */
export interface Side {
  label: string;
  apiKey: string;
  shape: DatasetShape;
  /** A fresh server for one round; `file` is where it may put its copy of a database. */
  start(file: string): Promise<StartedServer>;
  /** The scenario its load runs when the comparison measures `scenario` (default: the same). */
  loadScenario?(scenario: ScenarioName): ScenarioName;
  /**
   * Its work is partly done by processes the run does not watch (PostgreSQL's): turns then also
   * wait for the whole machine to be idle, and that work is in no per-request figure.
   */
  usesOtherProcesses?: boolean;
}

/**
 * A side served by the build at `root` (a checkout holding dist/ and dist-bench/), each round on a
 * fresh copy of `template`, its seeded database.
 */
export function seededSide(side: {
  label: string;
  root: string;
  template: string;
  apiKey: string;
  shape: DatasetShape;
}): Side {
  return {
    label: side.label,
    apiKey: side.apiKey,
    shape: side.shape,
    start: (file) => startFresh(side.root, side.template, file),
  };
}

/**
 * The bare node:http baseline as a side: it answers validate's body whatever the scenario, as in
 * a full run, where one baseline is the yardstick of every scenario.
 */
export function baselineSide(apiKey: string, shape: DatasetShape): Side {
  return {
    label: "baseline (bare node:http)",
    apiKey,
    shape,
    start: () => startBaselineServer(),
    loadScenario: () => "baseline",
  };
}

/**
 * One turn of one side, with the round it belongs to (counted from 0), and what its server did
 * after the turn's last request while the run waited for it to go idle (waitUntilIdle): that
 * deferred work is on neither side's measured time, so it is reported next to the turn.
 */
export type SideRun = ServerRun & {
  round: number;
  /** The server's CPU (all threads) in the waits after this turn, per request of the turn. */
  deferredCpuUsPerRequest?: number | null;
  /** How long those waits took. */
  idleWaitMs?: number;
};

export interface SideResult {
  scenario: ScenarioName;
  side: string;
  runs: SideRun[];
}

/**
 * Seeds the database at `databaseUrl` with the data set, using the migrations and seed code of
 * the build at `root`; returns the API key it made.
 */
export async function seedWith(
  root: string,
  databaseUrl: string,
  shape: DatasetShape,
): Promise<string> {
  const module = (path: string) => pathToFileURL(join(root, path)).href;
  const script = `
    const { openDatabase } = await import(${JSON.stringify(module("dist/db/database.js"))});
    const { migrateToLatest } = await import(${JSON.stringify(module("dist/db/migrate.js"))});
    const { seed } = await import(${JSON.stringify(module("dist-bench/bench/seed.js"))});
    const database = await openDatabase(${JSON.stringify(databaseUrl)});
    await migrateToLatest(database.db);
    const apiKey = await seed(database.db, ${JSON.stringify(shape)}, () => {});
    await database.close();
    process.stdout.write(JSON.stringify({ apiKey }));`;
  const stdout = await runCommand(process.execPath, ["--input-type=module", "-e", script], {
    cwd: root,
  });
  return (JSON.parse(stdout) as { apiKey: string }).apiKey;
}

/** Runs every scenario on both sides, `rounds` rounds of alternating turns (see above). */
export async function alternate(
  sides: [Side, Side],
  options: CompareOptions,
  work: string,
): Promise<SideResult[]> {
  const results: SideResult[] = [];
  const sliceSeconds = options.durationSeconds / options.slices;
  for (const scenario of options.scenarios) {
    const runs = sides.map((side) => ({ scenario, side: side.label, runs: [] as SideRun[] }));
    const load = (side: Side, seconds: number): LoadRun => ({
      scenario: side.loadScenario?.(scenario) ?? scenario,
      apiKey: side.apiKey,
      seconds,
      connections: options.connections,
      shape: side.shape,
    });
    for (let round = 0; round < options.rounds; round++) {
      log(`${scenario}, round ${round + 1}/${options.rounds}: starting both servers`);
      const servers: StartedServer[] = [];
      try {
        for (const [i, side] of sides.entries()) {
          servers.push(await side.start(join(work, `run-${i}.db`)));
        }
        // Order: A B, then B A, within a round and from one round to the next, so a linear drift
        // of the machine adds the same to both sides over an even number of rounds.
        const orderOf = (slice: number) => ((round + slice) % 2 === 0 ? [0, 1] : [1, 0]);
        for (const i of orderOf(0)) {
          await runLoad((servers[i] as StartedServer).url, load(sides[i] as Side, 2));
        }
        // Each server's latest turn, and the CPU seconds its server has used in the waits since:
        // work it deferred from that turn (none before its first: start-up and warm-up are not
        // measured).
        const latest: Array<{ run: SideRun; deferredSeconds: number } | undefined> = [];
        const settle = async () => {
          const wait = await waitUntilIdle(
            servers.map((server) => server.pid),
            { wholeMachine: sides.some((side) => side.usesOtherProcesses) },
          );
          if (wait.timedOut) log(`still busy after ${wait.waitedMs} ms; going on`);
          for (const [i, turn] of latest.entries()) {
            const cpu = wait.cpuSeconds[i];
            if (!turn || cpu === null || cpu === undefined || turn.run.totalRequests === 0)
              continue;
            turn.deferredSeconds += cpu;
            turn.run.idleWaitMs = (turn.run.idleWaitMs ?? 0) + wait.waitedMs;
            turn.run.deferredCpuUsPerRequest = Number(
              ((turn.deferredSeconds * 1e6) / turn.run.totalRequests).toFixed(1),
            );
          }
        };
        for (let slice = 0; slice < options.slices; slice++) {
          for (const i of orderOf(slice)) {
            await settle();
            const run: SideRun = {
              ...(await measureServer(
                servers[i] as StartedServer,
                load(sides[i] as Side, sliceSeconds),
              )),
              round,
            };
            runs[i]?.runs.push(run);
            latest[i] = { run, deferredSeconds: 0 };
          }
        }
        await settle();
        // What a server reported after its last turn (while the other side ran, or while it shut
        // down) goes to that turn, so a late fault still voids the run.
        for (const [i, server] of servers.entries()) {
          await stopProcess(server.child);
          const last = runs[i]?.runs.at(-1);
          if (last) last.serverFaults.push(...takeFaults(server.faults));
        }
      } finally {
        for (const server of servers) await stopProcess(server.child);
      }
    }
    results.push(...runs);
  }
  return results;
}

/** Starts the server of the build at `root` on `file`, a fresh copy of `template`. */
async function startFresh(root: string, template: string, file: string): Promise<StartedServer> {
  // Left by the previous run: its shared memory and its last-seen log (its own file since
  // migration 0007), which starts empty in every run.
  for (const suffix of ["-shm", "-last-seen", "-last-seen-wal", "-last-seen-shm"]) {
    rmSync(`${file}${suffix}`, { force: true });
  }
  for (const suffix of ["", "-wal"]) {
    rmSync(`${file}${suffix}`, { force: true });
    if (!existsSync(`${template}${suffix}`)) continue;
    copyFileSync(`${template}${suffix}`, `${file}${suffix}`);
    // Written back now, not by the kernel's flusher threads during the run: at 1 M licenses that
    // is ~1.1 GB, whose writeback would share the two cores with the server.
    const fd = openSync(`${file}${suffix}`, "r+");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
  return startServer(`sqlite:${file}`, { cwd: root });
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const spread = (values: number[], digits: number) =>
  `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;
const percent = (from: number, to: number) => `${(((to - from) / from) * 100).toFixed(1)} %`;
const signed = (fraction: number) =>
  `${fraction >= 0 ? "+" : "−"}${Math.abs(fraction * 100).toFixed(1)} %`;
const interval = (e: Estimate) =>
  e.n === 0
    ? "n/a (no round measured it)"
    : e.n === 1
      ? `${signed(e.mean)} (one round: no interval)`
      : `${signed(e.mean)} (${signed(e.low)} to ${signed(e.high)}, ${e.n} rounds)`;

/** A change as a ratio to the first side, e.g. "0.64× (0.61× to 0.67×, 8 rounds)". */
const times = (e: Estimate) =>
  e.n === 0
    ? "n/a (no round measured it)"
    : e.n === 1
      ? `${(1 + e.mean).toFixed(2)}× (one round: no interval)`
      : `${(1 + e.mean).toFixed(2)}× (${(1 + e.low).toFixed(2)}× to ${(1 + e.high).toFixed(2)}×, ${e.n} rounds)`;

/**
 * Prints both sides of each scenario and the change from the first to the second, and writes the
 * JSON report (`bench/results/<timestamp>-<kind>.json`) with `extra` merged in.
 */
export function report(
  kind: "ab" | "scale" | "rounds",
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
    p99: result.runs.map((run) => run.latencyMs.p99),
    deferred: result.runs.map((run) => run.deferredCpuUsPerRequest ?? Number.NaN),
  });
  const rows = [
    [
      "scenario",
      { ab: "build", scale: "data set", rounds: "server" }[kind],
      "req/s (mean)",
      "req/s (range)",
      ...(baseline === undefined ? [] : ["× baseline"]),
      "loop µs/req (mean)",
      "loop µs/req (range)",
      "CPU µs/req (mean)",
      "deferred CPU µs/req (mean)",
      "loop reads/req (mean)",
      "p99 ms (max)",
      "peak RSS MiB",
      "non-2xx",
    ],
  ];
  const summary: Array<Record<string, unknown>> = [];
  const verdicts: string[] = [];
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
        mean(f.deferred).toFixed(1),
        mean(f.reads).toFixed(2),
        String(Math.max(...f.p99)),
        String(Math.max(...f.rss)),
        String(result.runs.reduce((n, run) => n + run.non2xx + run.errors, 0)),
      ]);
    }
    const [a, b] = [figures(first), figures(second)];
    rows.push([
      "",
      "change of means",
      percent(mean(a.rps), mean(b.rps)),
      "",
      ...(baseline === undefined ? [] : [""]),
      percent(mean(a.loop), mean(b.loop)),
      "",
      percent(mean(a.process), mean(b.process)),
      "",
      percent(mean(a.reads), mean(b.reads)),
      "",
      "",
      "",
    ]);
    const changes = changesPerRound(first.runs, second.runs);
    const perRound = {
      requestsPerSecond: {
        changes: changes.requestsPerSecond,
        ...meanWithInterval(changes.requestsPerSecond),
      },
      eventLoopUsPerRequest: {
        changes: changes.eventLoopUs,
        ...meanWithInterval(changes.eventLoopUs),
      },
    };
    if (kind === "rounds") {
      // The second side is the service, the first the baseline: a change of −0.36 is 0.64×.
      const ratio = perRound.requestsPerSecond;
      verdicts.push(
        `${scenario}, requests/s × baseline per round (95 % interval): ${times(ratio)}; ` +
          `highest p99 of a turn ${Math.max(...b.p99)} ms; peak RSS ${Math.max(...b.rss)} MiB; ` +
          `CPU deferred past its turns ${mean(b.deferred).toFixed(1)} µs/req against ` +
          `${mean(b.process).toFixed(1)} in them`,
      );
    } else {
      verdicts.push(
        `${scenario}, ${second.side} against ${first.side}, mean change per round (95 % interval): ` +
          `req/s ${interval(perRound.requestsPerSecond)}, ` +
          `loop µs/req ${interval(perRound.eventLoopUsPerRequest)}`,
      );
    }
    summary.push({
      scenario,
      requestsPerSecondChange: mean(b.rps) / mean(a.rps) - 1,
      eventLoopUsPerRequestChange: mean(b.loop) / mean(a.loop) - 1,
      perRound,
      ...(kind === "rounds"
        ? {
            ratioToBaseline: {
              n: perRound.requestsPerSecond.n,
              mean: 1 + perRound.requestsPerSecond.mean,
              low: 1 + perRound.requestsPerSecond.low,
              high: 1 + perRound.requestsPerSecond.high,
            },
            p99MsMax: Math.max(...b.p99),
            peakRssMiB: Math.max(...b.rss),
          }
        : {}),
    });
  }
  printTable(rows);
  for (const line of verdicts) process.stdout.write(`${line}\n`);
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
