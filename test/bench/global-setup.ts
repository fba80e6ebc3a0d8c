import { execFileSync } from "node:child_process";

// The benchmark runs the compiled service (dist/) and its own compiled code (dist-bench/).
export default function setup(): void {
  for (const project of ["tsconfig.build.json", "tsconfig.bench.json"]) {
    execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", project], {
      stdio: "inherit",
    });
  }
}
