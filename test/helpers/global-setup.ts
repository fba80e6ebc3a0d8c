import { execFileSync } from "node:child_process";

// Process-level tests (durability, shutdown, CLI) run the compiled service exactly as
// `npm start` does, so build it once before any test file runs: @shipkey/publish first, as
// `npm run build` does, since the server's CLI imports it.
export default function setup(): void {
  // Vitest runs this setup for each project, each time from a fresh copy of this module: a
  // variable of the main process marks the build done.
  if (process.env.SHIPKEY_TEST_BUILT === "1") return;
  process.env.SHIPKEY_TEST_BUILT = "1";
  for (const project of ["packages/publish/tsconfig.build.json", "tsconfig.build.json"]) {
    execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", project], {
      stdio: "inherit",
    });
  }
  if (process.env.REQUIRE_POSTGRES === "1" && !process.env.TEST_DATABASE_URL) {
    throw new Error("REQUIRE_POSTGRES=1 but TEST_DATABASE_URL is not set");
  }
  if (process.env.REQUIRE_REDIS === "1" && !process.env.TEST_REDIS_URL) {
    throw new Error("REQUIRE_REDIS=1 but TEST_REDIS_URL is not set");
  }
}
