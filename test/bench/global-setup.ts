import { execFileSync } from "node:child_process";

// The benchmark runs the compiled service (dist/, which imports @shipkey/publish's build) and its
// own compiled code (dist-bench/).
export default function setup(): void {
  const projects = [
    "packages/publish/tsconfig.build.json",
    "tsconfig.build.json",
    "tsconfig.bench.json",
  ];
  for (const project of projects) {
    execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", project], {
      stdio: "inherit",
    });
  }
}
