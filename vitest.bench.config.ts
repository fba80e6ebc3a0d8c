import { defineConfig } from "vitest/config";

// `npm run test:bench`: the benchmark's smoke test, kept out of the default suite.
export default defineConfig({
  test: {
    include: ["test/bench/**/*.test.ts"],
    globalSetup: ["test/bench/global-setup.ts"],
    testTimeout: 60_000,
  },
});
