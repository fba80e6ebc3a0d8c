import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";

/**
 * What the benchmark reads of a process from Linux's /proc: CPU time, read system calls and
 * resident memory. Every reader gives null (or nothing) where there is no /proc.
 */

/** execFile as a promise (getconf here; the benchmark's other commands in processes.ts). */
export const execFileAsync = promisify(execFile);

/** Samples the process's resident set size every 100 ms; returns the peak in MiB. */
export function sampleRss(pid: number): () => number {
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
  // A run that fails before it stops sampling must not keep the benchmark alive.
  timer.unref();
  return () => {
    clearInterval(timer);
    read();
    return Math.round(peakKb / 1024);
  };
}

/**
 * CPU seconds (user + system) used so far by a process (all its threads) or, given `thread`, by
 * one of its threads; null where there is no /proc. The server's main thread is its event loop,
 * whose thread id is the process id: the bottleneck of every scenario (docs/performance.md).
 */
export async function cpuSecondsOf(pid: number, thread?: number): Promise<number | null> {
  try {
    const path = thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`;
    const stat = readFileSync(path, "utf8");
    // Fields after the ")" that closes the command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return ticks / (await clockTicksPerSecond());
  } catch {
    return null;
  }
}

let ticksPerSecond: number | undefined;
export async function clockTicksPerSecond(): Promise<number> {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number((await execFileAsync("getconf", ["CLK_TCK"])).stdout.trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/**
 * Read system calls (read, pread, recv...) made so far by one thread of a process; null where
 * there is no /proc. On the event loop these are the socket reads plus one `pread` per SQLite
 * page-cache miss, so the count per request shows page misses without the host's timing noise.
 */
export function readSyscallsOf(pid: number, thread: number): number | null {
  try {
    const io = readFileSync(`/proc/${pid}/task/${thread}/io`, "utf8");
    const count = /^syscr:\s+(\d+)$/m.exec(io)?.[1];
    return count === undefined ? null : Number(count);
  } catch {
    return null;
  }
}

/** What a wait for idle servers saw: how long it took, and each server's CPU meanwhile. */
export interface IdleWait {
  waitedMs: number;
  /** CPU seconds each pid used during the wait (null where /proc could not tell). */
  cpuSeconds: Array<number | null>;
  /** It stopped at `atMostMs` with some server still busy. */
  timedOut: boolean;
}

/**
 * Waits at least `atLeastMs`, then until none of `pids` has used more than one clock tick of CPU
 * over `windowMs` (at most `atMostMs` in all): what a server deferred during its turn (the
 * last-seen flush, up to a second later; a checkpoint; a garbage collection) then runs before the
 * next turn starts, instead of taking CPU from whichever server that turn measures. A process that
 * is gone counts as idle; where there is no /proc this only waits `atLeastMs`. `wholeMachine` also
 * waits until all cores together were busy less than a tenth of one core over a window (for work
 * done by processes outside `pids`, such as PostgreSQL's).
 */
export async function waitUntilIdle(
  pids: number[],
  { atLeastMs = 1100, windowMs = 250, atMostMs = 5000, wholeMachine = false } = {},
): Promise<IdleWait> {
  const started = Date.now();
  const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
  const cpuSeconds = async () => Promise.all(pids.map(async (pid) => await cpuSecondsOf(pid)));
  const first = await cpuSeconds();
  const ticksPerSecond = await clockTicksPerSecond();
  const tick = 1 / ticksPerSecond;
  const machineBusy = () => (wholeMachine ? machineBusySeconds(ticksPerSecond) : null);
  await sleep(Math.max(0, atLeastMs - windowMs));
  let before = first;
  if (atLeastMs > windowMs) before = await cpuSeconds();
  let machineBefore = machineBusy();
  let timedOut = false;
  for (;;) {
    await sleep(windowMs);
    const after = await cpuSeconds();
    const machineAfter = machineBusy();
    const busy =
      after.some((seconds, i) => {
        const from = before[i];
        return (
          seconds !== null && from !== null && from !== undefined && seconds - from > tick * 1.5
        );
      }) ||
      (machineBefore !== null &&
        machineAfter !== null &&
        machineAfter - machineBefore > (windowMs / 1000) * 0.1);
    before = after;
    machineBefore = machineAfter;
    if (!busy) break;
    if (Date.now() - started + windowMs > atMostMs) {
      timedOut = true;
      break;
    }
  }
  return {
    waitedMs: Date.now() - started,
    cpuSeconds: before.map((seconds, i) => {
      const from = first[i];
      return seconds === null || from === null || from === undefined ? null : seconds - from;
    }),
    timedOut,
  };
}

/** CPU seconds all cores have spent busy since boot (/proc/stat); null without /proc. */
function machineBusySeconds(ticksPerSecond: number): number | null {
  try {
    const fields = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "")
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
    const busy = fields
      .slice(0, 8)
      .reduce((sum, value, i) => (i === 3 || i === 4 ? sum : sum + value), 0);
    return busy / ticksPerSecond;
  } catch {
    return null;
  }
}
