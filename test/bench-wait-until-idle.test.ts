import { type ChildProcess, spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { waitUntilIdle } from "../bench/proc-stat.js";

// The benchmark's turns start only when every server has finished what it deferred (its
// last-seen flush, say), so that work is not measured on the next turn's time (bench/compare.ts).
// The bounds below are far apart on purpose (seconds against the 20 s limit): they tell a wait
// that watches the process from one that sleeps out its limit, not how fast the machine is.
describe.runIf(process.platform === "linux")("waitUntilIdle (bench/proc-stat.ts)", () => {
  const children: ChildProcess[] = [];
  const node = async (script: string, onLine?: () => void): Promise<number> => {
    const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    children.push(child);
    if (onLine) child.stdout.on("data", onLine);
    await new Promise((spawned) => child.once("spawn", spawned));
    return child.pid as number;
  };
  afterEach(() => {
    for (const child of children.splice(0)) child.kill("SIGKILL");
  });

  it("returns soon after a process that kept a core busy goes idle, with the CPU it used", async () => {
    // Busy for 1.5 s of wall time, then says so and sleeps.
    let idleAt: number | null = null;
    const pid = await node(
      `const end = Date.now() + 1500; while (Date.now() < end) {}
       process.stdout.write("idle\\n"); setTimeout(() => {}, 60000);`,
      () => {
        idleAt = Date.now();
      },
    );
    const wait = await waitUntilIdle([pid], { atLeastMs: 0, atMostMs: 20_000 });
    expect(idleAt).not.toBeNull();
    expect(Date.now() - (idleAt ?? 0)).toBeLessThan(3000);
    expect(wait.timedOut).toBe(false);
    expect(wait.cpuSeconds[0]).toBeGreaterThan(0.1);
  });

  it("returns soon after atLeastMs for processes that are idle, or gone", async () => {
    const idle = await node("setTimeout(() => {}, 60000);");
    const gone = await node("process.exit(0);");
    await new Promise((done) => setTimeout(done, 500)); // past their start-up
    const started = Date.now();
    const wait = await waitUntilIdle([idle, gone], { atLeastMs: 300, atMostMs: 20_000 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(280); // timers may fire a little early
    expect(Date.now() - started).toBeLessThan(5000);
    expect(wait.timedOut).toBe(false);
  });

  it("gives up on a process that never goes idle after atMostMs, and says so", async () => {
    const pid = await node("for (;;) {}");
    const started = Date.now();
    const wait = await waitUntilIdle([pid], { atLeastMs: 0, atMostMs: 1000 });
    expect(wait.timedOut).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(700);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
