import { execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);

/**
 * Runs the compiled benchmark with `args` on SQLite (or on the PostgreSQL server `postgresUrl`
 * names); its stdout and the JSON report it wrote.
 */
async function runBench(
  args: string[],
  postgresUrl = "",
): Promise<{ stdout: string; report: unknown }> {
  const results = mkdtempSync(join(tmpdir(), "shipkey-bench-smoke-"));
  try {
    const { stdout } = await run(process.execPath, ["dist-bench/bench/run.js", ...args], {
      env: { ...process.env, BENCH_RESULTS_DIR: results, BENCH_DATABASE_URL: postgresUrl },
    });
    const [file] = readdirSync(results);
    return { stdout, report: JSON.parse(readFileSync(join(results, file as string), "utf8")) };
  } finally {
    rmSync(results, { recursive: true, force: true });
  }
}

/** The process exists and is not a zombie (this machine's PID 1 may never reap orphans). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** What `--ab` and `--scale` write (bench/compare.ts): every run of each side. */
interface ComparisonReport {
  results: Array<{
    scenario: string;
    side: string;
    runs: Array<{
      non2xx: number;
      errors: number;
      totalRequests: number;
      requestsPerSecond: number;
      latencyMs: { p99: number };
      peakRssMiB: number;
      serverFaults: string[];
      round: number;
    }>;
  }>;
}

/**
 * Each side took `turns` turns, every request got a 2xx, the server reported no fault, and its RSS
 * was sampled.
 */
function expectEveryRunClean(report: ComparisonReport, turns: number): void {
  for (const result of report.results) {
    expect(result.runs).toHaveLength(turns);
    for (const measured of result.runs) {
      expect(measured.non2xx + measured.errors).toBe(0);
      expect(measured.totalRequests).toBeGreaterThan(0);
      expect(measured.peakRssMiB).toBeGreaterThan(0);
      expect(measured.serverFaults).toEqual([]);
    }
  }
}

/** A tiny data set, 1 s per scenario, few connections: enough to exercise the harness. */
const tinyRun = ["--licenses", "300", "--duration", "1", "--connections", "8"];

/** For the modes that take turns: two rounds of two 1 s turns per side, validate only. */
const twoRoundsOfValidate = [
  ...["--rounds", "2", "--scenarios", "validate"],
  ...[...tinyRun, "--duration", "2", "--slices", "2"],
];

// The benchmark reports, it never fails the build on speed: this only proves the harness runs
// every scenario end to end against the real server and that every request got a 2xx.
describe("npm run bench (smoke: tiny data set, 1 s per scenario, no timing assertions)", () => {
  it(
    "runs every scenario with zero errors and writes the JSON report",
    { timeout: 120_000 },
    async () => {
      const { stdout, report: written } = await runBench(tinyRun);
      expect(stdout).toMatch(/^scenario\s+req\/s/m);
      const report = written as {
        node: string;
        machine: { cpu: string; cores: number };
        scenarios: Array<{
          scenario: string;
          non2xx: number;
          errors: number;
          timeouts: number;
          totalRequests: number;
          peakRssMiB: number;
          eventLoopReadsPerRequest: number | null;
          serverFaults: string[];
        }>;
      };
      expect(report.node).toBe(process.version);
      expect(report.machine.cores).toBeGreaterThan(0);
      expect(report.scenarios.map((s) => s.scenario)).toEqual([
        "validate",
        "activate-deactivate",
        "publish",
        "mixed",
      ]);
      for (const scenario of report.scenarios) {
        expect({
          scenario: scenario.scenario,
          non2xx: scenario.non2xx,
          errors: scenario.errors + scenario.timeouts,
        }).toEqual({
          scenario: scenario.scenario,
          non2xx: 0,
          errors: 0,
        });
        expect(scenario.totalRequests).toBeGreaterThan(0);
        expect(scenario.peakRssMiB).toBeGreaterThan(0);
        // Nothing failed in the background either (a failing last-seen writer answers 2xx).
        expect(scenario.serverFaults).toEqual([]);
        // Every request is read from its socket at least once (Linux: /proc counts the reads).
        if (process.platform === "linux") {
          expect(scenario.eventLoopReadsPerRequest).toBeGreaterThanOrEqual(1);
        }
      }
    },
  );

  // "Everything it starts is stopped, even on Ctrl-C": the server, the load generator and the
  // temporary database, interrupted in the middle of a scenario.
  it.runIf(process.platform === "linux")(
    "Ctrl-C mid-scenario stops the server and the load generator and removes the database",
    { timeout: 120_000 },
    async () => {
      const results = mkdtempSync(join(tmpdir(), "shipkey-bench-smoke-"));
      try {
        const bench = spawn(
          process.execPath,
          ["dist-bench/bench/run.js", ...tinyRun, "--duration", "20", "--scenarios", "validate"],
          { env: { ...process.env, BENCH_RESULTS_DIR: results, BENCH_DATABASE_URL: "" } },
        );
        let stderr = "";
        const exited = new Promise<number | null>((done) => bench.once("exit", done));
        await new Promise<void>((loading, failed) => {
          bench.stderr.on("data", (chunk: Buffer) => {
            stderr += chunk.toString();
            if (/\[bench\] validate \.\.\./.test(stderr)) loading();
          });
          void exited.then(() => failed(new Error(`bench exited early:\n${stderr}`)));
        });
        // The load generator is running against the server now.
        await new Promise((done) => setTimeout(done, 1000));
        const server = /server http:\/\/127\.0\.0\.1:(\d+) \(pid (\d+)\)/.exec(stderr);
        const database = /database: sqlite at (\S+);/.exec(stderr)?.[1];
        expect(server).not.toBeNull();
        expect(database).toBeDefined();
        const [, port, pid] = server as RegExpExecArray;
        const loadGenerators = () =>
          readdirSync("/proc")
            .filter((entry) => /^\d+$/.test(entry))
            .filter((entry) => {
              try {
                const args = readFileSync(`/proc/${entry}/cmdline`, "utf8");
                return args.includes("load.js") && args.includes(`127.0.0.1:${port}`);
              } catch {
                return false; // gone meanwhile
              }
            });
        expect(loadGenerators()).toHaveLength(1);

        bench.kill("SIGINT");
        expect(await exited).toBe(130);
        expect(running(Number(pid))).toBe(false);
        expect(loadGenerators()).toEqual([]);
        expect(existsSync(dirname(database as string))).toBe(false);
        expect(readdirSync(results)).toEqual([]);
      } finally {
        rmSync(results, { recursive: true, force: true });
      }
    },
  );

  it(
    "--rounds gives each scenario's ratio to the baseline per round, from turns of both servers",
    { timeout: 180_000 },
    async () => {
      // publish too: the baseline answers validate's body whatever the service is measured on
      // (it would answer a publish body with a 400, which expectEveryRunClean refuses).
      const args = twoRoundsOfValidate.map((arg) =>
        arg === "validate" ? "validate,publish" : arg,
      );
      const { stdout, report: written } = await runBench(args);
      expect(stdout).toMatch(
        /^validate, requests\/s × baseline per round \(95 % interval\): \d+\.\d\d× \(.*, 2 rounds\)/m,
      );
      type Turn = ComparisonReport["results"][number]["runs"][number];
      const report = written as ComparisonReport & {
        summary: Array<{
          scenario: string;
          ratioToBaseline: { n: number; mean: number; low: number; high: number };
          p99MsMax: number;
          peakRssMiB: number;
        }>;
      };
      expect(report.results.map((r) => [r.scenario, r.side])).toEqual([
        ["validate", "baseline (bare node:http)"],
        ["validate", "shipkey"],
        ["publish", "baseline (bare node:http)"],
        ["publish", "shipkey"],
      ]);
      expectEveryRunClean(report, 4);
      expect(report.summary.map((s) => s.scenario)).toEqual(["validate", "publish"]);
      for (const summary of report.summary) {
        const [baseline, service] = report.results.filter((r) => r.scenario === summary.scenario);
        // Per round: the service's mean requests/s over its turns, over the baseline's.
        const perRound = (turns: Turn[], round: number) => {
          const inRound = turns.filter((turn) => turn.round === round);
          return inRound.reduce((n, turn) => n + turn.requestsPerSecond, 0) / inRound.length;
        };
        const ratios = [0, 1].map(
          (round) => perRound(service?.runs ?? [], round) / perRound(baseline?.runs ?? [], round),
        );
        expect(summary.ratioToBaseline.n).toBe(2);
        expect(summary.ratioToBaseline.mean).toBeCloseTo(
          (ratios[0] ?? 0) / 2 + (ratios[1] ?? 0) / 2,
          10,
        );
        expect(summary.ratioToBaseline.low).toBeLessThan(summary.ratioToBaseline.mean);
        expect(summary.ratioToBaseline.high).toBeGreaterThan(summary.ratioToBaseline.mean);
        // The service's figures, not the baseline's.
        const serviceTurns = service?.runs ?? [];
        expect(summary.p99MsMax).toBe(Math.max(...serviceTurns.map((turn) => turn.latencyMs.p99)));
        expect(summary.peakRssMiB).toBe(Math.max(...serviceTurns.map((turn) => turn.peakRssMiB)));
        expect(serviceTurns.map((turn) => turn.round)).toEqual([0, 0, 1, 1]);
      }
    },
  );

  // Each round on a fresh copy of the seeded PostgreSQL database; none of them outlives the run.
  it.runIf(process.env.TEST_DATABASE_URL)(
    "--rounds on PostgreSQL measures the baseline and the service in turns and drops every database it made",
    { timeout: 120_000 },
    async () => {
      const adminUrl = process.env.TEST_DATABASE_URL as string;
      const benchDatabases = async () => {
        const client = new pg.Client({ connectionString: adminUrl });
        await client.connect();
        try {
          const { rows } = await client.query<{ datname: string }>(
            "select datname from pg_database where datname like 'shipkey_bench_%'",
          );
          return rows.map((row) => row.datname);
        } finally {
          await client.end();
        }
      };
      const before = await benchDatabases();
      const { report: written } = await runBench(twoRoundsOfValidate, adminUrl);
      const report = written as ComparisonReport & { database: string };
      expect(report.database).toBe("postgres");
      expect(report.results.map((r) => r.side)).toEqual([
        "baseline (bare node:http)",
        "shipkey (PostgreSQL)",
      ]);
      expectEveryRunClean(report, 4);
      // None of its own is left (another run on the server may have made or dropped others).
      const after = await benchDatabases();
      expect(after.filter((name) => !before.includes(name))).toEqual([]);
    },
  );

  it("refuses --slices without a mode that takes turns", async () => {
    await expect(
      run(process.execPath, ["dist-bench/bench/run.js", ...tinyRun, "--slices", "1"], {
        env: { ...process.env, BENCH_DATABASE_URL: "" },
      }),
    ).rejects.toMatchObject({ stderr: expect.stringMatching(/--slices takes effect with/) });
  });

  it("refuses a CPU list taskset would not take before it seeds anything", async () => {
    const refused = run(process.execPath, ["dist-bench/bench/run.js", ...tinyRun], {
      env: { ...process.env, BENCH_DATABASE_URL: "", BENCH_LOAD_CPUS: "1;reboot" },
    });
    const { stderr } = (await refused.then(
      () => ({ stderr: "(the run went ahead)" }),
      (err: { stderr: string }) => err,
    )) as { stderr: string };
    expect(stderr).toMatch(/not a CPU list \(taskset -c\): 1;reboot/);
    expect(stderr).not.toMatch(/seeding/);
  });

  // --ab builds another commit in a temporary git worktree and alternates the two servers; only
  // where this is a git checkout (CI's clean clone is one).
  it.runIf(existsSync(".git"))(
    "--ab HEAD builds and measures both sides, reports both, and removes its worktree",
    { timeout: 300_000 },
    async () => {
      const { stdout, report: written } = await runBench([
        "--ab",
        "HEAD",
        "--rounds",
        "2",
        "--scenarios",
        "validate",
        ...tinyRun,
      ]);
      expect(stdout).toMatch(/^\s+change\s/m);
      const report = written as ComparisonReport;
      expect(report.results.map((r) => [r.scenario, r.side.split(" ")[0]])).toEqual([
        ["validate", "HEAD"],
        ["validate", "this"],
      ]);
      expectEveryRunClean(report, 2);
      const { stdout: worktrees } = await run("git", ["worktree", "list", "--porcelain"]);
      expect(worktrees).not.toMatch(/shipkey-bench-ab-/);
    },
  );

  it(
    "--scale measures validate on two data set sizes in turns within each round, next to the baseline",
    { timeout: 120_000 },
    async () => {
      const { stdout, report: written } = await runBench([
        "--scale",
        "200,400",
        ...twoRoundsOfValidate,
      ]);
      expect(stdout).toMatch(/^\s+change\s/m);
      expect(stdout).toMatch(
        /mean change per round \(95 % interval\): req\/s [+−]\d.*, 2 rounds\)/,
      );
      const report = written as ComparisonReport & {
        baselineRequestsPerSecond: number;
        summary: Array<{
          scenario: string;
          requestsPerSecondChange: number;
          perRound: { requestsPerSecond: { changes: number[]; low: number; high: number } };
        }>;
      };
      expect(report.baselineRequestsPerSecond).toBeGreaterThan(0);
      expect(report.results.map((r) => [r.scenario, r.side])).toEqual([
        ["validate", "200 licenses"],
        ["validate", "400 licenses"],
      ]);
      // Two rounds of two turns per side, each turn tagged with its round.
      expectEveryRunClean(report, 4);
      for (const result of report.results) {
        expect(result.runs.map((run) => run.round)).toEqual([0, 0, 1, 1]);
      }
      const [summary] = report.summary;
      expect(report.summary.map((s) => s.scenario)).toEqual(["validate"]);
      expect(Number.isFinite(summary?.requestsPerSecondChange)).toBe(true);
      expect(summary?.perRound.requestsPerSecond.changes).toHaveLength(2);
      expect(summary?.perRound.requestsPerSecond.low).toBeLessThanOrEqual(
        summary?.perRound.requestsPerSecond.high ?? Number.NaN,
      );
    },
  );
});
