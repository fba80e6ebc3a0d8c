import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAction } from "../helpers/action.js";
import { runCli } from "../helpers/cli.js";
import { type ServerProcess, startServer } from "../helpers/server-process.js";

const committed = "packages/publish/action";

/**
 * The repository's action (action.yml) as a workflow pinned to a commit of this repository runs
 * it: the publisher from that checkout (packages/publish/action/), with no registry and no npm.
 * The same action with a packed publisher: test/cli/publish-package.process.test.ts.
 */
describe("the GitHub Action", () => {
  let dir: string;
  let job: string;
  let server: ServerProcess;
  let apiKey: string;
  const installer = randomBytes(100_000);
  const signature = "dW50cnVzdGVkIGNvbW1lbnQ=";

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "shipkey-github-action-"));
    job = join(dir, "job");
    mkdirSync(join(job, "dist"), { recursive: true });
    writeFileSync(join(job, "dist", "App_2.0.0_x64-setup.exe"), installer);
    writeFileSync(join(job, "dist", "App_2.0.0_x64-setup.exe.sig"), `${signature}\n`);
    writeFileSync(join(job, "dist", "latest.yml"), "version: 2.0.0\n");
    writeFileSync(join(job, "CHANGES.md"), "## Fixed\n- the action\n");

    const databaseUrl = `sqlite:${join(dir, "server.db")}`;
    const product = ["products", "create", "--slug", "app", "--name", "App"];
    expect((await runCli(databaseUrl, product)).code).toBe(0);
    const created = await runCli(databaseUrl, [
      ...["api-keys", "create", "--name", "ci", "--scopes", "releases:write", "--json"],
    ]);
    expect(created.code).toBe(0);
    apiKey = (JSON.parse(created.stdout) as { key: string }).key;
    server = await startServer({ DATABASE_URL: databaseUrl, RATE_LIMITS: "off" });
  }, 180_000);

  afterAll(async () => {
    if (server && server.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await once(server.child, "exit");
    }
    rmSync(dir, { recursive: true, force: true });
  });

  const inputs = (extra: Record<string, string> = {}) => ({
    server: server.baseUrl,
    "api-key": apiKey,
    product: "app",
    version: "2.0.0",
    "base-url": "https://cdn.example.com/app/2.0.0/",
    files: "dist/*\n",
    "notes-file": "CHANGES.md",
    ...extra,
  });

  it("runs the publisher of its own checkout: installs nothing, asks no registry", async () => {
    const dry = await runAction(inputs({ "dry-run": "true" }), job);
    expect({ code: dry.code, stderr: dry.stderr }).toEqual({ code: 0, stderr: "" });
    const request = JSON.parse(dry.outputs.answer ?? "null") as { url: string };
    expect(request.url).toBe(`${server.baseUrl}/api/releases/publish`);
    expect(dry.stdout).not.toContain(apiKey);
  });

  it("publishes the release, which the server then serves, and gives its answer as the output", async () => {
    const ran = await runAction(inputs(), job);
    expect({ code: ran.code, stderr: ran.stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(ran.outputs.answer ?? "null")).toMatchObject({
      product: "App",
      version: "2.0.0",
      channel: "STABLE",
    });
    const latest = await fetch(
      `${server.baseUrl}/api/updates/app/latest?platform=WINDOWS&arch=X64`,
    );
    expect(await latest.json()).toMatchObject({
      version: "2.0.0",
      notes: expect.stringContaining("the action"),
      url: "https://cdn.example.com/app/2.0.0/App_2.0.0_x64-setup.exe",
      signature,
      sha512: createHash("sha512").update(installer).digest("base64"),
      fileSize: installer.length,
    });
  });

  it("fails the step with the server's refusal", async () => {
    const refused = await runAction(inputs({ "api-key": "shk_not-a-key" }), job);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('"code":"INVALID_API_KEY"');
    expect(refused.outputs).toEqual({});
  });

  it("fails the step when a glob matches nothing, before anything is sent", async () => {
    const missing = await runAction(inputs({ files: "dist/*.dmg" }), job);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toContain("::error::shipkey publish: no file matches dist/*.dmg");
  });

  it(`${committed}/ is what npm run build:action makes from packages/publish/src now`, async () => {
    const built = join(dir, "built");
    await promisify(execFile)(process.execPath, ["scripts/build-action.js", built]);
    const files = readdirSync(built).sort();
    expect(files).toContain("cli.js");
    expect(readdirSync(committed).sort()).toEqual(files);
    for (const file of files) {
      expect(readFileSync(join(committed, file), "utf8"), `${committed}/${file}`).toBe(
        readFileSync(join(built, file), "utf8"),
      );
    }
  });
});
