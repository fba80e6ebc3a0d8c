import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import {
  alternate,
  type CompareOptions,
  report,
  type Side,
  seededSide,
  seedWith,
} from "./compare.js";
import type { DatasetShape } from "./dataset.js";
import { log, onCleanup, runCommand } from "./processes.js";

/**
 * `npm run bench -- --ab <git-ref>`: compares this checkout with another commit on the same
 * machine in the same run (compare.ts). The other commit is built in a temporary git worktree (on
 * this checkout's node_modules); each build seeds its own copy of the same deterministic data set
 * with its own code and migrations.
 */
export interface AbOptions extends CompareOptions {
  ref: string;
  shape: DatasetShape;
}

export async function runAb(options: AbOptions): Promise<void> {
  const projectRoot = process.cwd();
  const git = (...args: string[]) => runCommand("git", args, { cwd: projectRoot });
  const sha = (await git("rev-parse", "--verify", `${options.ref}^{commit}`)).trim();
  const head = (await git("rev-parse", "HEAD")).trim();
  const changed = (await git("status", "--porcelain", "--untracked-files=no")).trim() !== "";

  const work = mkdtempSync(join(os.tmpdir(), "shipkey-bench-ab-"));
  onCleanup(() => rmSync(work, { recursive: true, force: true }));
  const refRoot = join(work, "ref");
  log(`building ${options.ref} (${sha.slice(0, 10)}) in a temporary worktree`);
  // Registered first: a Ctrl-C during the add must not leave git an entry for the worktree.
  onCleanup(async () => {
    await git("worktree", "remove", "--force", "--force", refRoot).catch(() => {});
    await git("worktree", "prune");
  });
  await git("worktree", "add", "--detach", refRoot, sha);
  const lock = (root: string) => readFileSync(join(root, "package-lock.json"), "utf8");
  if (lock(refRoot) !== lock(projectRoot)) {
    log("warning: its package-lock.json differs; it runs on this checkout's node_modules");
  }
  symlinkSync(join(projectRoot, "node_modules"), join(refRoot, "node_modules"), "dir");
  for (const project of ["tsconfig.build.json", "tsconfig.bench.json"]) {
    const tsc = join(projectRoot, "node_modules", "typescript", "bin", "tsc");
    await runCommand(process.execPath, [tsc, "-p", project], { cwd: refRoot });
  }

  const sides: Side[] = [];
  for (const [label, root] of [
    [`${options.ref} (${sha.slice(0, 10)})`, refRoot],
    [`this checkout (${head.slice(0, 10)}${changed ? " + changes" : ""})`, projectRoot],
  ] as const) {
    const template = join(work, `template-${sides.length}.db`);
    log(`seeding ${options.shape.licenses} licenses with the code of ${label}`);
    const apiKey = await seedWith(root, `sqlite:${template}`, options.shape);
    sides.push(seededSide({ label, root, template, apiKey, shape: options.shape }));
  }
  const [a, b] = sides as [Side, Side];
  report("ab", await alternate([a, b], options, work), options, { shape: options.shape });
}
