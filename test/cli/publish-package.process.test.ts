import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, delimiter, dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { arches, platforms } from "../../packages/publish/src/index.js";
import { type ServerProcess, startServer } from "../helpers/server-process.js";
import { runAction } from "../helpers/action.js";
import { runCli } from "../helpers/cli.js";
import { packAndInstall } from "../helpers/packages.js";
import {
  arches as serverArches,
  platforms as serverPlatforms,
} from "../../src/contracts/vocabulary.js";
import { testEnvironment } from "../helpers/environment.js";

const run = promisify(execFile);

interface Exit {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The publisher as a CI job gets it: packed (which builds it), installed from the tarball into a
 * fresh directory with no workspace link, and run from there against the compiled server.
 */
describe("@shipkey/publish installed from its tarball", () => {
  let dir: string;
  let ci: string;
  let tarball: string;
  let files: string[];
  let server: ServerProcess;
  let apiKey: string;
  const windows = randomBytes(200_000);
  const linux = randomBytes(50_000);
  const signature = "dW50cnVzdGVkIGNvbW1lbnQ=";
  const base = "https://cdn.example.com/app/1.4.0/";

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "shipkey-publish-package-"));
    ({ tarball, files, installedIn: ci } = await packAndInstall("packages/publish", dir, "ci"));

    const artifacts = join(ci, "dist");
    mkdirSync(artifacts);
    writeFileSync(join(artifacts, "App_1.4.0_x64-setup.exe"), windows);
    writeFileSync(join(artifacts, "App_1.4.0_x64-setup.exe.sig"), `${signature}\n`);
    writeFileSync(join(artifacts, "App-1.4.0.AppImage"), linux);
    writeFileSync(join(artifacts, "latest.yml"), "version: 1.4.0\n");
    writeFileSync(join(ci, "CHANGES.md"), "## Fixed\n- crashes\n");

    const databaseUrl = `sqlite:${join(dir, "server.db")}`;
    expect(
      (await runCli(databaseUrl, ["products", "create", "--slug", "app", "--name", "App"])).code,
    ).toBe(0);
    const created = await runCli(databaseUrl, [
      "api-keys",
      "create",
      "--name",
      "ci",
      "--scopes",
      "releases:write",
      "--json",
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

  /** PATH leads to this node, as actions/setup-node makes it lead to the job's. */
  const path = `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}`;

  /** Runs `file` in `cwd`; resolves with its exit code and output, whatever the code. */
  async function runIn(
    cwd: string,
    file: string,
    args: string[],
    env: Record<string, string>,
  ): Promise<Exit> {
    try {
      const { stdout, stderr } = await run(file, args, {
        cwd,
        env: testEnvironment({ PATH: path, ...env }),
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const failed = err as Exit;
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  }

  /** node_modules/.bin/shipkey-publish, run as a CI step runs it (its shebang finds node). */
  const publisher = (args: string[], key: string) =>
    runIn(ci, join(ci, "node_modules/.bin/shipkey-publish"), args, { SHIPKEY_API_KEY: key });

  const publishArgs = (...extra: string[]) => [
    "--server",
    server.baseUrl,
    "--product",
    "app",
    "--version",
    "1.4.0",
    "--channel",
    "STABLE",
    "--notes-file",
    "CHANGES.md",
    "--base-url",
    base,
    ...extra,
    "dist/App_1.4.0_x64-setup.exe",
    "dist/App_1.4.0_x64-setup.exe.sig",
    "dist/App-1.4.0.AppImage",
    "dist/latest.yml",
  ];

  it("holds the built code, its types, package.json and README.md, and nothing else", () => {
    expect(files).toEqual(
      expect.arrayContaining(["dist/cli.js", "dist/index.js", "dist/index.d.ts", "package.json"]),
    );
    expect(files).toContain("README.md");
    for (const file of files) {
      expect(file).toMatch(/^(dist\/[a-z-]+\.(js|d\.ts)|package\.json|README\.md)$/);
    }
    const manifest = JSON.parse(
      readFileSync(join(ci, "node_modules/@shipkey/publish/package.json"), "utf8"),
    ) as Record<string, unknown>;
    expect(manifest).toMatchObject({
      name: "@shipkey/publish",
      type: "module",
      engines: { node: ">=20" },
      bin: { "shipkey-publish": "dist/cli.js" },
    });
    expect(manifest.dependencies).toBeUndefined();
    expect(manifest.scripts).not.toHaveProperty("install");
    expect(manifest.scripts).not.toHaveProperty("postinstall");
    expect(manifest.repository).toMatchObject({ directory: "packages/publish" });
    expect(manifest.keywords).toEqual(expect.arrayContaining(["shipkey", "publish"]));
  });

  it("installs nothing but itself: no database driver, no native build", () => {
    const installed = readdirSync(join(ci, "node_modules")).filter((name) => !name.startsWith("."));
    expect(installed).toEqual(["@shipkey"]);
    expect(readdirSync(join(ci, "node_modules/@shipkey"))).toEqual(["publish"]);
    for (const driver of ["better-sqlite3", "pg", "kysely"])
      expect(installed).not.toContain(driver);
  });

  it("places its artifacts as the server's CLI does (the same platforms and arches)", () => {
    expect([...platforms]).toEqual([...serverPlatforms]);
    expect([...arches]).toEqual([...serverArches]);
  });

  it("--dry-run prints the request with the key redacted, and sends nothing", async () => {
    const dry = await publisher(publishArgs("--dry-run"), apiKey);
    expect(dry.code).toBe(0);
    expect(dry.stdout).not.toContain(apiKey);
    const request = JSON.parse(dry.stdout) as { url: string; body: { releases: unknown[] } };
    expect(request.url).toBe(`${server.baseUrl}/api/releases/publish`);
    expect(request.body.releases).toHaveLength(2);
    const latest = await fetch(
      `${server.baseUrl}/api/updates/app/latest?platform=WINDOWS&arch=X64`,
    );
    expect(latest.status).toBe(404);
  });

  it("reports a refusal with the server's code and exits 1", async () => {
    const refused = await publisher(publishArgs(), "shk_not-a-key");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("(INVALID_API_KEY, HTTP 401)");
    expect(refused.stderr).toMatch(/^shipkey-publish: /);
  });

  it("publishes a release that the server then serves", async () => {
    const published = await publisher(publishArgs("--json"), apiKey);
    expect(published.stderr).toBe("");
    expect(published.code).toBe(0);
    expect(JSON.parse(published.stdout)).toMatchObject({
      product: "App",
      version: "1.4.0",
      channel: "STABLE",
    });

    const sha512 = (data: Buffer) => createHash("sha512").update(data).digest("base64");
    const latest = async (platform: string) => {
      const response = await fetch(
        `${server.baseUrl}/api/updates/app/latest?platform=${platform}&arch=X64`,
      );
      expect(response.status).toBe(200);
      return (await response.json()) as Record<string, unknown>;
    };
    expect(await latest("WINDOWS")).toMatchObject({
      version: "1.4.0",
      channel: "STABLE",
      notes: expect.stringContaining("crashes"),
      url: `${base}App_1.4.0_x64-setup.exe`,
      signature,
      sha512: sha512(windows),
      fileSize: windows.length,
    });
    expect(await latest("LINUX")).toMatchObject({
      version: "1.4.0",
      url: `${base}App-1.4.0.AppImage`,
      signature: null,
      sha512: sha512(linux),
      fileSize: linux.length,
    });
  });

  it("npx runs the tarball with no registry reachable and an empty npm cache", async () => {
    const job = join(dir, "job-npx");
    mkdirSync(job);
    copyFileSync(tarball, join(job, basename(tarball)));
    const npx = process.platform === "win32" ? "npx.cmd" : "npx";
    const ran = await runIn(
      job,
      npx,
      ["--yes", "--package", `./${basename(tarball)}`, "shipkey-publish", "--help"],
      {
        npm_config_registry: "http://127.0.0.1:9/",
        npm_config_cache: join(job, "npm-cache"),
      },
    );
    expect(ran.code).toBe(0);
    expect(ran.stdout).toMatch(/^Usage: shipkey-publish /);
  });

  it("the repository's action (action.yml) runs the tarball given as publisher, with no registry", async () => {
    // A job's workspace that holds the tarball and the artifacts, and no node_modules.
    const job = join(dir, "job");
    mkdirSync(job);
    const inputs: Record<string, string> = {
      server: server.baseUrl,
      "api-key": apiKey,
      product: "app",
      version: "1.4.1",
      "base-url": "https://cdn.example.com/app/1.4.1/",
      files: `${ci}/dist/*.exe\n  ${ci}/dist/*.exe.sig\n\n${ci}/dist/*.AppImage\n`,
      "notes-file": join(ci, "CHANGES.md"),
      publisher: `./${basename(tarball)}`,
    };
    copyFileSync(tarball, join(job, basename(tarball)));
    const ran = await runAction(inputs, job);
    expect({ code: ran.code, stderr: ran.stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(ran.outputs.answer ?? "null")).toMatchObject({
      product: "App",
      version: "1.4.1",
    });

    const response = await fetch(
      `${server.baseUrl}/api/updates/app/latest?platform=WINDOWS&arch=X64`,
    );
    expect(await response.json()).toMatchObject({
      version: "1.4.1",
      url: "https://cdn.example.com/app/1.4.1/App_1.4.0_x64-setup.exe",
      signature,
    });
  });

  it("the action refuses a publisher that is not a packed @shipkey/publish", async () => {
    const job = join(dir, "job-wrong-tarball");
    mkdirSync(join(job, "other", "package"), { recursive: true });
    writeFileSync(join(job, "other", "package", "index.js"), "");
    await run("tar", ["-czf", "../other.tgz", "package"], { cwd: join(job, "other") });
    const ran = await runAction(
      {
        server: server.baseUrl,
        "api-key": apiKey,
        product: "app",
        version: "1.4.2",
        "base-url": "https://cdn.example.com/app/1.4.2/",
        files: `${ci}/dist/*.exe`,
        publisher: "other.tgz",
      },
      job,
    );
    expect(ran.code).toBe(1);
    expect(ran.stdout).toContain(
      "::error::shipkey publish: other.tgz is not a packed @shipkey/publish",
    );
  });
});
