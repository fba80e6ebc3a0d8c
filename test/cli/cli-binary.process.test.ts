import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { testEnvironment } from "../helpers/environment.js";

// The other CLI tests call runCli in-process; these run the compiled binaries as a shell does,
// for what only a process shows: the launcher, exit statuses, real stdin, stdout and stderr.

interface Exit {
  code: number;
  stdout: string;
  stderr: string;
}

async function exec(
  file: string,
  args: string[],
  env: Record<string, string> = {},
  input = "",
): Promise<Exit> {
  const running = promisify(execFile)(process.execPath, [file, ...args], {
    env: testEnvironment(env),
  });
  running.child.stdin?.end(input);
  try {
    const { stdout, stderr } = await running;
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as Exit;
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe("bin/shipkey.js", () => {
  const dir = mkdtempSync(join(tmpdir(), "shipkey-binary-"));
  const env = { DATABASE_URL: `sqlite:${join(dir, "shipkey.db")}` };
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("--version exits 0; alone it prints the usage on stderr and exits 2", async () => {
    expect(await exec("bin/shipkey.js", ["--version"], env)).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/^\d+\.\d+\.\d+\n$/),
      stderr: "",
    });
    const alone = await exec("bin/shipkey.js", [], env);
    expect(alone).toMatchObject({ code: 2, stdout: "" });
    expect(alone.stderr).toMatch(/^Usage: shipkey/m);
  });

  it("creates the database, reads a password from stdin, and exits 1 on a refusal", async () => {
    const created = await exec(
      "bin/shipkey.js",
      ["admins", "create", "--email", "ops@example.com", "--password-stdin", "--json"],
      env,
      "correct horse battery staple\n",
    );
    expect(created.code).toBe(0);
    expect(created.stderr).toContain("shipkey: creating a new database at");
    expect(JSON.parse(created.stdout)).toMatchObject({ email: "ops@example.com" });

    const missing = await exec(
      "bin/shipkey.js",
      ["licenses", "create", "--product", "nope", "--max-machines", "1"],
      env,
    );
    expect(missing).toEqual({
      code: 1,
      stdout: "",
      stderr: 'shipkey: Product not found: "nope"\n',
    });
  });
});

describe("shipkey-publish (the compiled package) words parse errors alike", () => {
  it("an unknown option is named in balanced quotes, exit 2", async () => {
    expect(await exec("packages/publish/dist/cli.js", ["--bogus"])).toEqual({
      code: 2,
      stdout: "",
      stderr:
        'shipkey-publish: Unknown option "--bogus"\nRun `shipkey-publish --help` for usage.\n',
    });
  });
});
