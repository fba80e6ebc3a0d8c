import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import type { DatasetShape } from "./dataset.js";
import type { LoadOptions, LoadResult } from "./load.js";
import { cpuSecondsOf, execFileAsync, readSyscallsOf, sampleRss } from "./proc-stat.js";
import type { ScenarioName } from "./scenarios.js";

/**
 * What the benchmark's runs (bench/run.ts, and compare.ts for --ab and --scale) share: the processes they start, which
 * are all stopped on exit and on Ctrl-C, cleanup steps, the load generator, and the server's CPU
 * time read from /proc.
 */
const children = new Set<ChildProcess>();
const cleanups: Array<() => Promise<void> | void> = [];
let cleaningUp = false;

/** Registers a step for the end of the run (temporary files, databases, worktrees). */
export function onCleanup(step: () => Promise<void> | void): void {
  cleanups.push(step);
}

/**
 * Throws once the run has begun to stop (Ctrl-C): whatever is made after that point (a database,
 * say) would miss the cleanup steps, which may already have run.
 */
export function refuseWhileStopping(what: string): void {
  if (cleaningUp) throw new Error(`the run is stopping: ${what} not made`);
}

/**
 * Kills every child process, waits until they are gone (at most 5 s), then runs the cleanup steps,
 * newest first; runs once.
 */
export async function cleanup(): Promise<void> {
  if (cleaningUp) return;
  cleaningUp = true;
  // A killed process is gone only when it has been reaped ("exit"); one inside a system call
  // (an fsync of the server's background thread, say) dies when the call returns. Waiting keeps
  // "everything it started is stopped" true at the moment the benchmark exits.
  const gone = [...children].map(
    (child) => new Promise<void>((done) => child.once("exit", () => done())),
  );
  for (const child of children) child.kill("SIGKILL");
  await Promise.race([
    Promise.all(gone),
    new Promise<void>((done) => setTimeout(done, 5000).unref()),
  ]);
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

export function log(line: string): void {
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
  cwd?: string,
  /** Sees the child as soon as it is spawned, before its first output. */
  watch?: (child: ChildProcess) => void,
): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const [file, fileArgs] = pinnedTo(process.env.BENCH_SERVER_CPUS, process.execPath, args);
  const child = track(spawn(file, fileArgs, { env, cwd, stdio: ["ignore", "pipe", "pipe"] }));
  watch?.(child);
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
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}: ${args.join(" ")}\n${output}`));
    });
    // Not started at all (taskset missing, say): without a listener this would end the run.
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(new Error(`could not start ${file}: ${err.message}`));
    });
  });
}

/** Throws at once if BENCH_SERVER_CPUS or BENCH_LOAD_CPUS is set to a list taskset would refuse. */
export function checkPinning(): void {
  for (const cpus of [process.env.BENCH_SERVER_CPUS, process.env.BENCH_LOAD_CPUS]) {
    pinnedTo(cpus, process.execPath, []);
  }
}

/**
 * The command line that runs `file` on the CPUs `cpus` names (a taskset list such as "0" or
 * "0-1"), or unchanged without one. taskset execs the command, so the pid stays the program's
 * own (the CPU and RSS readings rely on it), and threads it starts later inherit the mask.
 * BENCH_SERVER_CPUS pins every server the benchmark starts (baseline and service alike),
 * BENCH_LOAD_CPUS the load generator.
 */
export function pinnedTo(
  cpus: string | undefined,
  file: string,
  args: string[],
): [string, string[]] {
  if (cpus === undefined || cpus === "") return [file, args];
  if (!/^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$/.test(cpus)) {
    throw new Error(`not a CPU list (taskset -c): ${cpus}`);
  }
  return ["taskset", ["-c", cpus, file, ...args]];
}

export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Runs a command, tracked like every other child, and resolves with its stdout. */
export async function runCommand(
  file: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<string> {
  const pending = execFileAsync(file, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    maxBuffer: 16 * 1024 * 1024,
    timeout: options.timeoutMs ?? 600_000,
  });
  if (pending.child) track(pending.child);
  return (await pending).stdout;
}

export type Measured = LoadResult & {
  /** CPU of the whole server process per request (µs); null off Linux. */
  cpuUsPerRequest: number | null;
  /** CPU of the server's event-loop thread alone per request (µs); null off Linux. */
  eventLoopUsPerRequest: number | null;
  /** Read system calls of the event-loop thread per request; null off Linux. */
  eventLoopReadsPerRequest: number | null;
};

/**
 * Runs `load` and reports the server's CPU microseconds and event-loop reads per request over
 * it. CPU per request is far steadier than requests/s on a shared machine: it does not depend on
 * what else got the cores during the run.
 */
async function withCpuPerRequest(pid: number, load: () => Promise<LoadResult>): Promise<Measured> {
  const counters = async () => [
    await cpuSecondsOf(pid),
    await cpuSecondsOf(pid, pid),
    readSyscallsOf(pid, pid),
  ];
  const before = await counters();
  const result = await load();
  const after = await counters();
  const perRequest = (i: number, scale: number, digits: number) => {
    const [from, to] = [before[i], after[i]];
    return from === null || from === undefined || to === null || to === undefined
      ? null
      : result.totalRequests === 0
        ? null
        : Number((((to - from) * scale) / result.totalRequests).toFixed(digits));
  };
  return {
    ...result,
    cpuUsPerRequest: perRequest(0, 1e6, 1),
    eventLoopUsPerRequest: perRequest(1, 1e6, 1),
    eventLoopReadsPerRequest: perRequest(2, 1, 2),
  };
}

export interface LoadRun {
  scenario: ScenarioName;
  apiKey: string;
  seconds: number;
  connections: number;
  shape: DatasetShape;
}

/** Drives one scenario from the separate load-generator process (bench/load.ts). */
export async function runLoad(url: string, run: LoadRun): Promise<LoadResult> {
  const options: LoadOptions = {
    url,
    scenario: run.scenario,
    durationSeconds: run.seconds,
    connections: run.connections,
    shape: run.shape,
    apiKey: run.apiKey,
  };
  const stdout = await runCommand(
    ...pinnedTo(process.env.BENCH_LOAD_CPUS, process.execPath, [
      join(import.meta.dirname, "load.js"),
      JSON.stringify(options),
    ]),
    { timeoutMs: (run.seconds + 60) * 1000 },
  );
  return JSON.parse(stdout) as LoadResult;
}

/**
 * Starts the bare node:http baseline (baseline-server.ts) on loopback and a free port. It has no
 * log: what it writes on stderr counts as a fault, as for the server.
 */
export async function startBaselineServer(): Promise<StartedServer> {
  const faults: FaultLog = { count: 0, lines: [], taken: 0 };
  const { child, match } = await startProcess(
    [join(import.meta.dirname, "baseline-server.js")],
    process.env,
    /listening (\d+)/,
    undefined,
    (spawned) => collectFaults(spawned, faults),
  );
  return { child, url: `http://127.0.0.1:${match[1]}`, pid: child.pid as number, faults };
}

/** Runs the bare node:http baseline under `run`'s load, then stops it. */
export async function measureBaselineServer(run: LoadRun): Promise<Measured> {
  const baseline = await startBaselineServer();
  try {
    return await withCpuPerRequest(baseline.pid, () => runLoad(baseline.url, run));
  } finally {
    await stopProcess(baseline.child);
  }
}

export interface StartedServer {
  child: ChildProcess;
  url: string;
  pid: number;
  /**
   * What the server has reported as a fault since it was spawned: log lines at level error or
   * fatal, and anything on stderr. A background fault (say, the last-seen writer failing) leaves
   * every answer a 2xx but makes the figures meaningless, so runs report these.
   */
  faults: FaultLog;
}

export interface FaultLog {
  /** Every fault line so far. */
  count: number;
  /** The first `maxFaultLines` of them. */
  lines: string[];
  /** `count` when measureServer last took the new ones. */
  taken: number;
}

const maxFaultLines = 1000;

/**
 * Starts the Shipkey server as `npm start` runs it (`node dist/server.js`, production) on
 * `databaseUrl`, on loopback and a free port; `cwd` is the checkout holding dist/. Node options in
 * `BENCH_SERVER_NODE_ARGS` go before the script, in every mode of the benchmark:
 * `BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof"` profiles each server (give a
 * directory: `--ab` runs one build in a temporary worktree, deleted at the end).
 */
export async function startServer(
  databaseUrl: string,
  options: { cwd?: string } = {},
): Promise<StartedServer> {
  const faults: FaultLog = { count: 0, lines: [], taken: 0 };
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter((a) => a !== "");
  const { child, match } = await startProcess(
    [...nodeArgs, "dist/server.js"],
    {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: "0",
      HOST: "127.0.0.1",
      NODE_ENV: "production",
    },
    /Server listening at (http:\/\/127\.0\.0\.1:\d+)/,
    options.cwd,
    (spawned) => collectFaults(spawned, faults),
  );
  return { child, url: match[1] as string, pid: child.pid as number, faults };
}

/** Adds the fault lines `child` writes to `faults` (StartedServer.faults). */
function collectFaults(child: ChildProcess, faults: FaultLog): void {
  const collect = (isFault: (line: string) => boolean) => {
    let partial = "";
    return (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        if (line.trim() === "" || !isFault(line)) continue;
        faults.count++;
        if (faults.lines.length < maxFaultLines) faults.lines.push(line);
      }
    };
  };
  child.stdout?.on(
    "data",
    collect((line) => /"level":(5|6)\d/.test(line)),
  );
  child.stderr?.on(
    "data",
    collect(() => true),
  );
}

/**
 * The fault lines since the last call (for the first call: since the server was spawned, so
 * its start and warm-up count too), with a last line saying how many were not kept.
 */
export function takeFaults(faults: FaultLog): string[] {
  const taken = faults.lines.slice(faults.taken, faults.count);
  const notKept = faults.count - faults.taken - taken.length;
  faults.taken = faults.count;
  return notKept > 0 ? [...taken, `(and ${notKept} more fault lines)`] : taken;
}

/** One scenario run against the server, as measureServer reports it. */
export type ServerRun = Measured & {
  peakRssMiB: number;
  /**
   * Fault lines since the server's previous run (the first: since it started): none, or no
   * figure holds.
   */
  serverFaults: string[];
};

/** Runs one scenario against a started server: its CPU and reads per request, and its peak RSS. */
export async function measureServer(server: StartedServer, run: LoadRun): Promise<ServerRun> {
  const stopSampling = sampleRss(server.pid);
  let peakRssMiB: number | null = null;
  try {
    const measured = await withCpuPerRequest(server.pid, () => runLoad(server.url, run));
    peakRssMiB = stopSampling();
    const serverFaults = takeFaults(server.faults);
    if (serverFaults.length > 0) {
      log(`the server reported fault(s) before or during this run; the first:`);
      log(`  ${serverFaults[0]?.slice(0, 400)}`);
    }
    return { ...measured, peakRssMiB, serverFaults };
  } finally {
    // A failed run stops sampling too, or its timer would keep sampling a process that is gone.
    if (peakRssMiB === null) stopSampling();
  }
}

/**
 * A run in which the server reported faults measured something else than the service working
 * (a background writer failing is faster, for one): say so, and end with a non-zero exit code.
 */
export function failOnServerFaults(runs: Array<Pick<ServerRun, "serverFaults">>): void {
  const faults = runs.reduce((n, run) => n + run.serverFaults.length, 0);
  if (faults === 0) return;
  log(`the server reported ${faults} fault(s) during the measured runs: the figures do not hold`);
  process.exitCode = 1;
}
