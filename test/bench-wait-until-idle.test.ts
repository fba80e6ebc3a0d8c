import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { waitUntilIdle } from "../bench/proc-stat.js";

// The benchmark's turns start only when every server has finished what it deferred (its
// last-seen flush, say), so that work is not measured on the next turn's time (bench/compare.ts).
describe.runIf(process.platform === "linux")("waitUntilIdle (bench/proc-stat.ts)", () => {
  it("returns only after a process that keeps a core busy has gone idle", async () => {
    // Busy for 1.5 s of wall time, then says so and sleeps.
    const child = spawn(
      process.execPath,
      [
        "-e",
        `const end = Date.now() + 1500; while (Date.now() < end) {}
         process.stdout.write("idle\\n"); setTimeout(() => {}, 60000);`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    try {
      let wentIdle = false;
      child.stdout.on("data", () => {
        wentIdle = true;
      });
      await new Promise((spawned) => child.once("spawn", spawned));
      await waitUntilIdle([child.pid as number], { atLeastMs: 0, atMostMs: 20_000 });
      expect(wentIdle).toBe(true);
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("gives up on a process that never goes idle after atMostMs", async () => {
    const child = spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" });
    try {
      await new Promise((spawned) => child.once("spawn", spawned));
      const started = Date.now();
      await waitUntilIdle([child.pid as number], { atLeastMs: 0, atMostMs: 1000 });
      // It returned (the test would time out otherwise), and not before its limit.
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    } finally {
      child.kill("SIGKILL");
    }
  });
});
