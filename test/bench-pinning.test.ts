import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { pinnedTo, startBaselineServer } from "../bench/processes.js";

// BENCH_SERVER_CPUS / BENCH_LOAD_CPUS put the benchmark's servers and its load generator on
// CPUs of their own (docs/performance.md, "Running the benchmark").
describe("pinnedTo (bench/processes.ts)", () => {
  it("leaves the command alone without a CPU list", () => {
    expect(pinnedTo(undefined, "node", ["a.js"])).toEqual(["node", ["a.js"]]);
    expect(pinnedTo("", "node", ["a.js"])).toEqual(["node", ["a.js"]]);
  });

  it("refuses anything that is not a taskset CPU list", () => {
    for (const bad of ["x", "0;1", "-1", "0,", "0 1", "1-"]) {
      expect(() => pinnedTo(bad, "node", [])).toThrow(/not a CPU list/);
    }
  });

  describe("where taskset cannot be started", () => {
    const saved = { path: process.env.PATH, cpus: process.env.BENCH_SERVER_CPUS };
    afterEach(() => {
      process.env.PATH = saved.path;
      if (saved.cpus === undefined) delete process.env.BENCH_SERVER_CPUS;
      else process.env.BENCH_SERVER_CPUS = saved.cpus;
    });

    it("fails the server's start with a message instead of ending the run", async () => {
      process.env.PATH = "/nonexistent";
      process.env.BENCH_SERVER_CPUS = "0";
      await expect(startBaselineServer()).rejects.toThrow(/could not start taskset/);
    });
  });

  it.runIf(process.platform === "linux" && existsSync("/usr/bin/taskset"))(
    "runs the program itself, with its own pid, on the CPUs named",
    async () => {
      const [file, args] = pinnedTo("0", process.execPath, ["-e", "setTimeout(() => {}, 30000)"]);
      const child = spawn(file, args, { stdio: "ignore" });
      try {
        // taskset execs the program: until it has, /proc shows taskset's own command line.
        let cmdline = "";
        for (let i = 0; i < 100 && !cmdline.includes("setTimeout"); i++) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          cmdline = readFileSync(`/proc/${child.pid}/cmdline`, "utf8");
        }
        expect(cmdline.startsWith(process.execPath)).toBe(true);
        const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
        expect(status).toMatch(/^Cpus_allowed_list:\s+0$/m);
      } finally {
        child.kill("SIGKILL");
      }
    },
  );
});
