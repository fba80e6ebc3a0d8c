// `npm test`: the type check and the linters run beside vitest, not before it. The test files
// spend much of their time waiting on child processes, so the checks take cores that would idle.
// The checks' output is held and printed whole after vitest's; any failure fails the run.
// Arguments go to vitest (`npm test -- test/licenses`).
import { spawn } from "node:child_process";

/** Runs an npm script or a binary; `quiet` holds its output instead of streaming it. */
function run(command, args, quiet) {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      stdio: quiet ? ["ignore", "pipe", "pipe"] : "inherit",
      shell: process.platform === "win32",
    });
    let output = "";
    child.stdout?.on("data", (chunk) => (output += chunk));
    child.stderr?.on("data", (chunk) => (output += chunk));
    child.on("error", (err) => resolve({ code: 1, output: String(err) }));
    child.on("close", (code) => resolve({ code: code ?? 1, output }));
  });
}

const checks = [
  ["typecheck", run("npm", ["run", "--silent", "typecheck"], true)],
  ["lint", run("npm", ["run", "--silent", "lint"], true)],
];
const tests = await run("npx", ["vitest", "run", ...process.argv.slice(2)], false);
let failed = tests.code !== 0;
for (const [name, pending] of checks) {
  const { code, output } = await pending;
  if (code === 0) continue;
  failed = true;
  process.stderr.write(`\nnpm run ${name} failed:\n${output}\n`);
}
process.exitCode = failed ? 1 : 0;
