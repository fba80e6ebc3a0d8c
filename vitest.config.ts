import { configDefaults, defineConfig } from "vitest/config";

/**
 * Two projects. In-process tests build the app and call inject(): they are fast and keep tight
 * deadlines. Tests that start processes (the server, the CLI, npm, a PostgreSQL cluster, nginx,
 * Chromium) are named *.process.test.ts (the browser test *.browser.test.ts) and get generous
 * deadlines, so a loaded machine makes them slow, never red.
 */
const startsProcesses = ["test/**/*.process.test.ts", "test/**/*.browser.test.ts"];

export default defineConfig({
  test: {
    globalSetup: ["test/helpers/global-setup.ts"],
    // Many tests wait on child processes: six test files at a time keep a 2-core machine busy,
    // where vitest's default (cores - 1) is one and three left the cores idle half the run.
    // minWorkers equal to maxWorkers: with isolate off, vitest 3.2 otherwise reports a spurious
    // "Terminating worker thread" as the pool shrinks.
    maxWorkers: 6,
    minWorkers: 6,
    // Test files share each worker's module cache instead of importing the service again per
    // file (a third of the CPU time). Every file builds its own app and database; nothing in
    // src keeps state in a module beyond caches keyed by their database.
    isolate: false,
    projects: [
      {
        extends: true,
        test: {
          name: "in-process",
          include: ["test/**/*.test.ts"],
          // The benchmark's smoke test runs with `npm run test:bench` (vitest.bench.config.ts).
          exclude: [...configDefaults.exclude, "test/bench/**", ...startsProcesses],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: "processes",
          include: startsProcesses,
          testTimeout: 180_000,
          hookTimeout: 240_000,
        },
      },
    ],
  },
});
