import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { testEnvironment } from "../helpers/environment.js";

// The benchmark reports, it never fails the build on speed: these only prove that it runs every
// scenario end to end against the real server with every request answered 2xx, and cleans up.

const run = promisify(execFile);
const tiny = ["--licenses", "200", "--rounds", "1", "--duration", "1", "--connections", "8"];

interface Report {
  database: string;
  serverFaults: string[];
  scenarios: Array<{
    scenario: string;
    errors: number;
    serviceRequestsPerSecond: number;
    baselineRequestsPerSecond: number;
    peakRssMB: number | null;
  }>;
}

async function runBench(databaseUrl: string): Promise<{ stdout: string; report: Report }> {
  const results = mkdtempSync(join(tmpdir(), "shipkey-bench-smoke-"));
  try {
    const { stdout } = await run(process.execPath, ["dist-bench/bench/run.js", ...tiny], {
      env: testEnvironment({ BENCH_RESULTS_DIR: results, BENCH_DATABASE_URL: databaseUrl }),
    });
    const [file] = readdirSync(results);
    const report = JSON.parse(readFileSync(join(results, file ?? ""), "utf8")) as Report;
    return { stdout, report };
  } finally {
    rmSync(results, { recursive: true, force: true });
  }
}

function expectClean({ stdout, report }: { stdout: string; report: Report }, database: string) {
  expect(stdout).toMatch(/^scenario\s+service req\/s\s+baseline req\/s\s+× baseline/m);
  expect(report.database).toBe(database);
  expect(report.serverFaults).toEqual([]);
  expect(report.scenarios.map((s) => s.scenario)).toEqual([
    "validate",
    "validate-signed",
    "activate-deactivate",
    "activate-webhook",
    "publish",
    "validate-1000",
    "validate-2",
    "update-check",
    "update-check-rollout",
    "public-normal",
    "public-hostile",
    "appcast-plain-notes",
    "appcast-worst-notes",
  ]);
  for (const scenario of report.scenarios) {
    expect({ scenario: scenario.scenario, errors: scenario.errors }).toEqual({
      scenario: scenario.scenario,
      errors: 0,
    });
    expect(scenario.serviceRequestsPerSecond).toBeGreaterThan(0);
    expect(scenario.baselineRequestsPerSecond).toBeGreaterThan(0);
    if (process.platform === "linux") expect(scenario.peakRssMB).toBeGreaterThan(0);
  }
}

/** Load generators (load.js) driving the server at `url`. */
const loadGenerators = (url: string) =>
  readdirSync("/proc").filter((entry) => {
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      return args.includes("load.js") && args.includes(`"${url}"`) && running(Number(entry));
    } catch {
      return false; // not a process, or gone meanwhile
    }
  });

/** The process exists and is not a zombie. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

describe.concurrent("npm run bench (smoke: tiny data set, one round of 1 s turns)", () => {
  it("runs every scenario on SQLite with zero errors and writes the JSON report", async () => {
    expectClean(await runBench(""), "sqlite");
  });

  it.runIf(process.env.TEST_DATABASE_URL)(
    "runs every scenario on PostgreSQL and drops the database it made",
    async () => {
      const adminUrl = process.env.TEST_DATABASE_URL ?? "";
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
      expectClean(await runBench(adminUrl), "postgres");
      const after = await benchDatabases();
      expect(after.filter((name) => !before.includes(name))).toEqual([]);
    },
  );

  it.runIf(process.platform === "linux")(
    "Ctrl-C mid-turn stops the server and the load generator and removes the database",
    async () => {
      const temp = mkdtempSync(join(tmpdir(), "shipkey-bench-smoke-"));
      try {
        const args = ["dist-bench/bench/run.js", ...tiny, "--duration", "30"];
        const bench = spawn(process.execPath, [...args, "--scenarios", "validate"], {
          env: testEnvironment({ TMPDIR: temp, BENCH_RESULTS_DIR: temp, BENCH_DATABASE_URL: "" }),
        });
        let stderr = "";
        const exited = new Promise<number | null>((done) => bench.once("exit", done));
        await new Promise<void>((measuring, failed) => {
          bench.stderr.on("data", (chunk: Buffer) => {
            stderr += chunk.toString();
            if (/round 1\/1: validate/.test(stderr)) measuring();
          });
          void exited.then(() => failed(new Error(`bench exited early:\n${stderr}`)));
        });
        await new Promise((done) => setTimeout(done, 1500)); // the baseline's turn is running
        const [, pid, url] = /service \S+ \(pid (\d+)\), baseline (\S+)/.exec(stderr) ?? [];
        expect(running(Number(pid))).toBe(true);
        expect(loadGenerators(url ?? "")).toHaveLength(1);
        bench.kill("SIGINT");
        expect(await exited).toBe(130);
        expect(running(Number(pid))).toBe(false);
        expect(loadGenerators(url ?? "")).toEqual([]);
        // The temporary database directory was removed, and no report was written.
        expect(readdirSync(temp)).toEqual([]);
      } finally {
        rmSync(temp, { recursive: true, force: true });
      }
    },
  );
});
