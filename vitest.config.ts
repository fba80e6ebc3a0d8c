import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The benchmark's smoke test runs with `npm run test:bench` (vitest.bench.config.ts).
    exclude: [...configDefaults.exclude, "test/bench/**"],
    globalSetup: ["test/helpers/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
