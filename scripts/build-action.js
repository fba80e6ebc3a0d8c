// `npm run build:action`: the publisher as action.yml runs it, from the action's own checkout with
// nothing to install. tsc compiles packages/publish/src (its tsconfig.build.json, without
// declarations), and each file is written to packages/publish/action/ (or the directory given as
// the argument) with a line saying so. The files are committed: a job that uses the action at a
// commit runs that commit's publisher. test/cli/github-action.process.test.ts builds them again
// and fails while the committed ones differ.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const out = resolve(process.argv[2] ?? join(root, "packages/publish/action"));
const header =
  "// Generated from packages/publish/src by `npm run build:action`: edit the source, then run it.\n";

const compiled = mkdtempSync(join(tmpdir(), "shipkey-build-action-"));
try {
  execFileSync(
    process.execPath,
    [
      join(root, "node_modules/typescript/bin/tsc"),
      "-p",
      join(root, "packages/publish/tsconfig.build.json"),
      "--outDir",
      compiled,
      "--declaration",
      "false",
    ],
    { stdio: "inherit" },
  );
  mkdirSync(out, { recursive: true });
  for (const name of readdirSync(out)) {
    if (name.endsWith(".js")) rmSync(join(out, name));
  }
  for (const name of readdirSync(compiled).sort()) {
    if (!name.endsWith(".js")) continue;
    const code = readFileSync(join(compiled, name), "utf8");
    // A shebang must stay the first line.
    const shebang = code.startsWith("#!") ? code.slice(0, code.indexOf("\n") + 1) : "";
    writeFileSync(join(out, name), shebang + header + code.slice(shebang.length));
  }
} finally {
  rmSync(compiled, { recursive: true, force: true });
}
