import { defineConfig } from "vitest/config";

// `npm run test:bench`: the benchmark's smoke test, kept out of the default suite.
export default defineConfig({
  test: {
    include: ["test/bench/**/*.test.ts"],
    globalSetup: ["test/bench/global-setup.ts"],
    // Nine scenarios, each against the service and the baseline, on a machine shared with others.
    testTimeout: 120_000,
  },
});
