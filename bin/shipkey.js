#!/usr/bin/env node
// Thin launcher: the CLI is compiled TypeScript (built by `npm ci` via the prepare script).
import { existsSync } from "node:fs";

const entry = new URL("../dist/cli/main.js", import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write("shipkey: not built yet; run `npm run build` in the project first\n");
  process.exit(1);
}
await import(entry.href);
