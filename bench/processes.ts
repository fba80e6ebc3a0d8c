import { type ChildProcess, execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import type { LoadOptions, LoadResult } from "./load.js";

/**
 * The processes the benchmark starts (servers, load generators), all stopped on exit and on
 * Ctrl-C, and the cleanup steps (temporary files, databases) run after them.
 */
const children = new Set<ChildProcess>();
const cleanups: Array<() => unknown> = [];
let cleaningUp = false;

export function log(line: string): void {
  process.stderr.write(`[bench] ${line}\n`);
}

/** Registers a step for the end of the run; throws once the run has begun to stop. */
export function onCleanup(step: () => unknown): void {
  if (cleaningUp) throw new Error("the run is stopping");
  cleanups.push(step);
}

/** Kills every child, waits until they are gone (at most 5 s), then runs the steps, newest first. */
export async function cleanup(): Promise<void> {
  if (cleaningUp) return;
  cleaningUp = true;
  const gone = [...children].map((child) => new Promise((done) => child.once("exit", done)));
  for (const child of children) child.kill("SIGKILL");
  await Promise.race([Promise.all(gone), new Promise((done) => setTimeout(done, 5000).unref())]);
  for (const step of cleanups.reverse()) {
    try {
      await step();
    } catch (err) {
      log(`cleanup: ${err instanceof Error ? err.message : String(err)}`);
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

function track<T extends ChildProcess>(child: T): T {
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((done) => probe.listen(0, "127.0.0.1", done));
  const address = probe.address();
  await new Promise((done) => probe.close(done));
  if (address === null || typeof address === "string") throw new Error("no free port");
  return address.port;
}

export interface Server {
  child: ChildProcess;
  url: string;
  /** Lines logged at level error or fatal, and anything on stderr. */
  faults: string[];
}

/**
 * Starts `node <args>` with PORT set to a free loopback port and resolves once it answers HTTP
 * (any status), within 60 s.
 */
export async function startServer(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Server> {
  const port = await freePort();
  const child = track(
    spawn(process.execPath, args, {
      env: { ...process.env, ...env, PORT: String(port), HOST: "127.0.0.1" },
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  const server: Server = { child, url: `http://127.0.0.1:${port}`, faults: [] };
  let tail = "";
  const collect = (isFault: (line: string) => boolean) => (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-4000);
    for (const line of chunk.toString().split("\n")) {
      if (line.trim() !== "" && isFault(line) && server.faults.length < 100) {
        server.faults.push(line.slice(0, 500));
      }
    }
  };
  child.stdout.on(
    "data",
    collect((line) => /"level":(5|6)\d/.test(line)),
  );
  child.stderr.on(
    "data",
    collect(() => true),
  );
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${args.join(" ")} exited before it answered:\n${tail}`);
    }
    if (Date.now() > deadline) throw new Error(`${args.join(" ")}: no answer in 60 s\n${tail}`);
    try {
      await fetch(`${server.url}/healthz`);
      return server;
    } catch {
      await new Promise((done) => setTimeout(done, 100));
    }
  }
}

/** Runs one scenario from the separate load-generator process (load.ts). */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const pending = promisify(execFile)(
    process.execPath,
    [join(import.meta.dirname, "load.js"), JSON.stringify(options)],
    { maxBuffer: 1024 * 1024, timeout: (options.durationSeconds + 30) * 1000 },
  );
  track(pending.child);
  return JSON.parse((await pending).stdout) as LoadResult;
}

/** Samples the resident set of `pid` every 100 ms until the returned function is called: peak MB. */
export function sampleRss(pid: number | undefined): () => number | null {
  let peakKiB: number | null = null;
  const read = () => {
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
      if (Number.isFinite(kib)) peakKiB = Math.max(peakKiB ?? 0, kib);
    } catch {
      // no /proc (not Linux) or the process is gone
    }
  };
  read();
  const timer = setInterval(read, 100);
  timer.unref();
  return () => {
    clearInterval(timer);
    read();
    return peakKiB === null ? null : Math.round((peakKiB * 1024) / 1e6);
  };
}
