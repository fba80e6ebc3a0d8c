import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The benchmark's smoke test runs with `npm run test:bench` (vitest.bench.config.ts).
    exclude: [...configDefaults.exclude, "test/bench/**"],
    globalSetup: ["test/helpers/global-setup.ts"],
    // Many tests wait on child processes (the service, the CLI, a PostgreSQL cluster): three
    // test files at a time keep a 2-core machine busy, where vitest's default (cores - 1) is one.
    maxWorkers: 3,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
