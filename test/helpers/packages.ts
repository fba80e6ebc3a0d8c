import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

/**
 * A workspace package as a user gets it: `npm pack` in `packageDir` (which builds it) into `dir`,
 * then the tarball installed with `npm install` into a fresh project `dir/<project>`, with no
 * workspace link. Answers the tarball, the files it holds (sorted) and the project's directory.
 */
export async function packAndInstall(
  packageDir: string,
  dir: string,
  project: string,
): Promise<{ tarball: string; files: string[]; installedIn: string }> {
  const { stdout } = await run(npm, ["pack", "--json", "--pack-destination", dir], {
    cwd: resolve(packageDir),
  });
  const [packed] = JSON.parse(stdout) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  if (!packed) throw new Error("npm pack made nothing");
  const tarball = join(dir, packed.filename);
  const installedIn = join(dir, project);
  mkdirSync(installedIn, { recursive: true });
  writeFileSync(
    join(installedIn, "package.json"),
    JSON.stringify({ name: project, private: true, type: "module" }),
  );
  await run(npm, ["install", tarball, "--no-audit", "--no-fund", "--prefer-offline"], {
    cwd: installedIn,
  });
  return { tarball, files: packed.files.map((file) => file.path).sort(), installedIn };
}
