import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { DatasetShape } from "./dataset.js";
import {
  log,
  type Measured,
  onCleanup,
  runCommand,
  runLoad,
  startProcess,
  stopProcess,
  withCpuPerRequest,
} from "./processes.js";
import type { ScenarioName } from "./scenarios.js";
import { printTable } from "./table.js";

/**
 * `npm run bench -- --ab <git-ref>`: compares this checkout with another commit on the same
 * machine in the same run. The other commit is built in a temporary git worktree (on this
 * checkout's node_modules); each build seeds its own copy of the same deterministic data set
 * with its own code and migrations; then the two servers take turns, one at a time, in the
 * order A B B A A B …, so a drift of the machine during the run weighs on both alike.
 *
 * The figure to read is the event loop's CPU per request: the event loop is the server's
 * bottleneck, and its CPU time does not depend on how the cores were shared during a run, which
 * moves requests/s by ±20 % on a shared machine (docs/performance.md).
 */
export interface AbOptions {
  ref: string;
  rounds: number;
  scenarios: ScenarioName[];
  durationSeconds: number;
  connections: number;
  shape: DatasetShape;
}

interface Build {
  label: string;
  /** A checkout holding dist/ and dist-bench/. */
  root: string;
  /** The seeded database every run of this build starts from. */
  template: string;
  apiKey: string;
}

interface AbResult {
  scenario: ScenarioName;
  build: string;
  runs: Measured[];
}

export async function runAb(options: AbOptions): Promise<void> {
  const projectRoot = process.cwd();
  const git = (...args: string[]) => runCommand("git", args, { cwd: projectRoot });
  const sha = (await git("rev-parse", "--verify", `${options.ref}^{commit}`)).trim();
  const head = (await git("rev-parse", "HEAD")).trim();
  const changed = (await git("status", "--porcelain", "--untracked-files=no")).trim() !== "";

  const work = mkdtempSync(join(os.tmpdir(), "shipkey-bench-ab-"));
  onCleanup(() => rmSync(work, { recursive: true, force: true }));
  const refRoot = join(work, "ref");
  log(`building ${options.ref} (${sha.slice(0, 10)}) in a temporary worktree`);
  // Registered first: a Ctrl-C during the add must not leave git an entry for the worktree.
  onCleanup(async () => {
    await git("worktree", "remove", "--force", "--force", refRoot).catch(() => {});
    await git("worktree", "prune");
  });
  await git("worktree", "add", "--detach", refRoot, sha);
  const lock = (root: string) => readFileSync(join(root, "package-lock.json"), "utf8");
  if (lock(refRoot) !== lock(projectRoot)) {
    log("warning: its package-lock.json differs; it runs on this checkout's node_modules");
  }
  symlinkSync(join(projectRoot, "node_modules"), join(refRoot, "node_modules"), "dir");
  for (const project of ["tsconfig.build.json", "tsconfig.bench.json"]) {
    const tsc = join(projectRoot, "node_modules", "typescript", "bin", "tsc");
    await runCommand(process.execPath, [tsc, "-p", project], { cwd: refRoot });
  }

  const builds: Build[] = [];
  for (const [label, root] of [
    [`${options.ref} (${sha.slice(0, 10)})`, refRoot],
    [`this checkout (${head.slice(0, 10)}${changed ? " + changes" : ""})`, projectRoot],
  ] as const) {
    const template = join(work, `template-${builds.length}.db`);
    log(`seeding ${options.shape.licenses} licenses with the code of ${label}`);
    const apiKey = await seedWith(root, template, options.shape);
    builds.push({ label, root, template, apiKey });
  }

  const results: AbResult[] = [];
  for (const scenario of options.scenarios) {
    const runs = builds.map((build) => ({ scenario, build: build.label, runs: [] as Measured[] }));
    for (let round = 0; round < options.rounds; round++) {
      // A B, then B A: a linear drift of the machine adds the same to both sides.
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const i of order) {
        const build = builds[i] as Build;
        log(`${scenario}, round ${round + 1}/${options.rounds}: ${build.label}`);
        runs[i]?.runs.push(await measure(build, scenario, options, join(work, "run.db")));
      }
    }
    results.push(...runs);
  }

  report(results, options);
}

/** Seeds `file` with the data set, using the migrations and seed code of the build at `root`. */
async function seedWith(root: string, file: string, shape: DatasetShape): Promise<string> {
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

/** One run: a fresh copy of the build's database, its server, a warm-up, then the scenario. */
async function measure(
  build: Build,
  scenario: ScenarioName,
  options: AbOptions,
  file: string,
): Promise<Measured> {
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${file}${suffix}`, { force: true });
  copyFileSync(build.template, file);
  if (existsSync(`${build.template}-wal`)) copyFileSync(`${build.template}-wal`, `${file}-wal`);
  const server = await startProcess(
    ["dist/server.js"],
    {
      ...process.env,
      DATABASE_URL: `sqlite:${file}`,
      PORT: "0",
      HOST: "127.0.0.1",
      NODE_ENV: "production",
    },
    /Server listening at (http:\/\/127\.0\.0\.1:\d+)/,
    build.root,
  );
  try {
    const url = server.match[1] as string;
    const load = (seconds: number) => ({
      scenario,
      apiKey: build.apiKey,
      seconds,
      connections: options.connections,
      shape: options.shape,
    });
    await runLoad(url, load(2));
    return await withCpuPerRequest(server.child.pid as number, () =>
      runLoad(url, load(options.durationSeconds)),
    );
  } finally {
    await stopProcess(server.child);
  }
}

function report(results: AbResult[], options: AbOptions): void {
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
  const spread = (values: number[], digits: number) =>
    `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;
  const figures = (result: AbResult) => ({
    rps: result.runs.map((run) => run.requestsPerSecond),
    loop: result.runs.map((run) => run.eventLoopUsPerRequest ?? Number.NaN),
    process: result.runs.map((run) => run.cpuUsPerRequest ?? Number.NaN),
    reads: result.runs.map((run) => run.eventLoopReadsPerRequest ?? Number.NaN),
  });
  const rows = [
    [
      "scenario",
      "build",
      "req/s (mean)",
      "req/s (range)",
      "loop µs/req (mean)",
      "loop µs/req (range)",
      "CPU µs/req (mean)",
      "loop reads/req (mean)",
      "non-2xx",
    ],
  ];
  const summary: Array<Record<string, unknown>> = [];
  for (const scenario of options.scenarios) {
    const [ref, current] = results.filter((result) => result.scenario === scenario);
    if (!ref || !current) continue;
    for (const result of [ref, current]) {
      const f = figures(result);
      rows.push([
        scenario,
        result.build,
        mean(f.rps).toFixed(0),
        spread(f.rps, 0),
        mean(f.loop).toFixed(1),
        spread(f.loop, 1),
        mean(f.process).toFixed(1),
        mean(f.reads).toFixed(2),
        String(result.runs.reduce((n, run) => n + run.non2xx + run.errors, 0)),
      ]);
    }
    const [a, b] = [figures(ref), figures(current)];
    const change = (from: number, to: number) => `${(((to - from) / from) * 100).toFixed(1)} %`;
    rows.push([
      "",
      "change",
      change(mean(a.rps), mean(b.rps)),
      "",
      change(mean(a.loop), mean(b.loop)),
      "",
      change(mean(a.process), mean(b.process)),
      change(mean(a.reads), mean(b.reads)),
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
  const file = join(resultsDir, `${startedAt.replace(/[:.]/g, "-")}-ab.json`);
  const document = {
    startedAt,
    machine: { cpu: cpus[0]?.model ?? "unknown", cores: cpus.length },
    node: process.version,
    options,
    summary,
    results,
  };
  writeFileSync(file, `${JSON.stringify(document, null, 2)}\n`);
  log(`results written to ${file}`);
}
