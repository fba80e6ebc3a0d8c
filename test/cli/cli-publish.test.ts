import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Recognition, recognizeArtifact } from "../../packages/publish/src/artifact-names.js";
import { planArtifacts } from "../../packages/publish/src/publish.js";
import { listReleases } from "../../src/domain/releases/manage-releases.js";
import { type CliResult, runCli } from "../helpers/cli.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

describe("artifact file names", () => {
  const rows: Array<[string, Recognition]> = [
    // Tauri
    ["App_1.4.0_x64-setup.exe", artifact("WINDOWS", "X64")],
    ["App_1.4.0_arm64-setup.exe", artifact("WINDOWS", "ARM64")],
    ["App_1.4.0_x64_en-US.msi", artifact("WINDOWS", "X64")],
    ["App_1.4.0_arm64_en-US.msi", artifact("WINDOWS", "ARM64")],
    ["App_1.4.0_x64-setup.nsis.zip", artifact("WINDOWS", "X64")],
    ["App_1.4.0_x64_en-US.msi.zip", artifact("WINDOWS", "X64")],
    ["App_1.4.0_aarch64.dmg", artifact("MACOS", "ARM64")],
    ["App_1.4.0_x64.dmg", artifact("MACOS", "X64")],
    ["App.app.tar.gz", artifact("MACOS", null)],
    ["App_aarch64.app.tar.gz", artifact("MACOS", "ARM64")],
    ["App_x64.app.tar.gz", artifact("MACOS", "X64")],
    ["App_1.4.0_universal.dmg", artifact("MACOS", null)],
    ["App_1.4.0_amd64.AppImage", artifact("LINUX", "X64")],
    ["App_1.4.0_aarch64.AppImage", artifact("LINUX", "ARM64")],
    ["App_1.4.0_amd64.AppImage.tar.gz", artifact("LINUX", "X64")],
    ["app_1.4.0_amd64.deb", artifact("LINUX", "X64")],
    ["app_1.4.0_arm64.deb", artifact("LINUX", "ARM64")],
    ["app-1.4.0-1.x86_64.rpm", artifact("LINUX", "X64")],
    ["app-1.4.0-1.aarch64.rpm", artifact("LINUX", "ARM64")],
    // electron-builder (the default arch, x64, is left out of most names)
    ["App Setup 1.4.0.exe", artifact("WINDOWS", "X64")],
    ["App Setup 1.4.0-arm64.exe", artifact("WINDOWS", "ARM64")],
    ["App 1.4.0.exe", artifact("WINDOWS", "X64")],
    ["App-1.4.0-full.nupkg", artifact("WINDOWS", "X64")],
    ["App-1.4.0-win.zip", artifact("WINDOWS", "X64")],
    ["App-1.4.0-arm64-win.zip", artifact("WINDOWS", "ARM64")],
    ["App-1.4.0-mac.zip", artifact("MACOS", "X64")],
    ["App-1.4.0-arm64-mac.zip", artifact("MACOS", "ARM64")],
    ["App-1.4.0-universal-mac.zip", artifact("MACOS", null)],
    ["App-1.4.0.dmg", artifact("MACOS", "X64")],
    ["App-1.4.0-arm64.dmg", artifact("MACOS", "ARM64")],
    ["App-1.4.0.pkg", artifact("MACOS", "X64")],
    ["App-1.4.0.AppImage", artifact("LINUX", "X64")],
    ["App-1.4.0-arm64.AppImage", artifact("LINUX", "ARM64")],
    ["App-1.4.0-x86_64.AppImage", artifact("LINUX", "X64")],
    ["app_1.4.0_amd64.snap", artifact("LINUX", "X64")],
    ["app-1.4.0.tar.gz", artifact(null, "X64")],
    // Arches Shipkey has no value for
    [
      "App_1.4.0_x86-setup.exe",
      { kind: "artifact", platform: "WINDOWS", arch: null, unsupportedArch: "x86" },
    ],
    [
      "App Setup 1.4.0-ia32.exe",
      { kind: "artifact", platform: "WINDOWS", arch: null, unsupportedArch: "ia32" },
    ],
    [
      "app_1.4.0_armhf.deb",
      { kind: "artifact", platform: "LINUX", arch: null, unsupportedArch: "armhf" },
    ],
    // Not artifacts
    [
      "App_1.4.0_x64-setup.exe.sig",
      { kind: "skip", reason: "signature, read beside its artifact" },
    ],
    ["App Setup 1.4.0.exe.blockmap", { kind: "skip", reason: "electron-builder blockmap" }],
    ["latest.yml", { kind: "skip", reason: "update metadata" }],
    ["latest-mac.yml", { kind: "skip", reason: "update metadata" }],
    ["builder-effective-config.yaml", { kind: "skip", reason: "update metadata" }],
    ["RELEASES", { kind: "skip", reason: "update metadata" }],
    // Nothing to go by
    ["README.txt", artifact(null, null)],
    ["App-1.4.0", artifact(null, null)],
    ["App-1.4.0-arm64-x64.dmg", artifact("MACOS", null)],
    ["constructor.exe", artifact("WINDOWS", "X64")],
  ];

  it.each(rows)("%s", (name, expected) => {
    expect(recognizeArtifact(name)).toEqual(expected);
  });

  it("two files on one platform and arch: an error naming both", () => {
    expect(() => planArtifacts(["dist/App-1.4.0-mac.zip", "dist/App-1.4.0.dmg"], {})).toThrow(
      "App-1.4.0-mac.zip and App-1.4.0.dmg are both MACOS X64",
    );
  });

  it("a file it cannot place is an error, unless --platform/--arch place it", () => {
    expect(() => planArtifacts(["dist/App.app.tar.gz"], {})).toThrow(
      "cannot tell the arch of App.app.tar.gz from its name: pass --arch",
    );
    expect(() => planArtifacts(["README.txt"], {})).toThrow("pass --platform");
    expect(() => planArtifacts(["App_1.4.0_x86-setup.exe"], {})).toThrow(
      "x86 is not an arch Shipkey publishes (X64, ARM64): pass --arch",
    );
    expect(planArtifacts(["dist/App.app.tar.gz", "dist/latest.yml"], { arch: "ARM64" })).toEqual({
      artifacts: [
        { path: "dist/App.app.tar.gz", name: "App.app.tar.gz", platform: "MACOS", arch: "ARM64" },
      ],
      skipped: [{ name: "latest.yml", reason: "update metadata" }],
    });
    expect(
      planArtifacts(["build/update.bin"], { platform: "LINUX", arch: "X64" }).artifacts,
    ).toEqual([{ path: "build/update.bin", name: "update.bin", platform: "LINUX", arch: "X64" }]);
  });
});

function artifact(
  platform: "WINDOWS" | "MACOS" | "LINUX" | null,
  arch: "X64" | "ARM64" | null,
): Recognition {
  return { kind: "artifact", platform, arch };
}

/** `shipkey` with an environment holding no DATABASE_URL that could be opened. */
function cli(args: string[], env: Record<string, string | undefined>): Promise<CliResult> {
  return runCli("not a database url", args, { env });
}

const sha512 = (data: Buffer) => createHash("sha512").update(data).digest("base64");

describe.each(dialects)("shipkey publish against a running server (%s)", (dialect) => {
  let f: Fixture;
  let server: string;
  let dir: string;
  const windows = randomBytes(300_000);
  const linux = randomBytes(70_000);
  const mac = randomBytes(1234);
  const base = "https://cdn.example.com/app/1.4.0/";

  beforeAll(async () => {
    f = await createFixture(dialect);
    await f.app.listen({ port: 0, host: "127.0.0.1" });
    server = `http://127.0.0.1:${(f.app.server.address() as AddressInfo).port}`;
    dir = mkdtempSync(join(tmpdir(), "shipkey-publish-"));
    const dist = join(dir, "dist");
    mkdirSync(join(dist, "win-unpacked"), { recursive: true });
    writeFileSync(join(dist, "App_1.4.0_x64-setup.exe"), windows);
    writeFileSync(join(dist, "App_1.4.0_x64-setup.exe.sig"), "dW50cnVzdGVkIGNvbW1lbnQ=\n");
    writeFileSync(join(dist, "App_1.4.0_amd64.AppImage"), linux);
    writeFileSync(join(dist, "App 1.4.0-arm64-mac.zip"), mac);
    writeFileSync(join(dist, "latest.yml"), "version: 1.4.0\n");
    writeFileSync(join(dir, "CHANGES.md"), "## Fixed\n- crashes\n");
  });
  afterAll(async () => {
    await f.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const files = () =>
    [
      "App_1.4.0_x64-setup.exe",
      "App_1.4.0_x64-setup.exe.sig",
      "App_1.4.0_amd64.AppImage",
      "App 1.4.0-arm64-mac.zip",
      "latest.yml",
      "win-unpacked",
    ].map((name) => join(dir, "dist", name));
  const publishArgs = (version: string, ...extra: string[]) => [
    "publish",
    "--server",
    server,
    "--product",
    f.product.slug,
    "--version",
    version,
    "--channel",
    "STABLE",
    "--notes-file",
    join(dir, "CHANGES.md"),
    "--base-url",
    base,
    ...extra,
    ...files(),
  ];

  it("publishes every artifact with its size, signature and digest; no database opened", async () => {
    const result = await cli([...publishArgs("1.4.0"), "--json"], {
      SHIPKEY_API_KEY: f.publishKey,
    });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      product: "Desktop App",
      version: "1.4.0",
      channel: "STABLE",
      releases: [
        { platform: "WINDOWS", arch: "X64", status: "created" },
        { platform: "LINUX", arch: "X64", status: "created" },
        { platform: "MACOS", arch: "ARM64", status: "created" },
      ],
    });
    const [release] = await listReleases(f.db, f.product.slug);
    expect(release).toMatchObject({
      version: "1.4.0",
      channel: "STABLE",
      releaseNotes: "## Fixed\n- crashes\n",
    });
    expect(release?.entries).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          platform: "WINDOWS",
          arch: "X64",
          downloadUrl: `${base}App_1.4.0_x64-setup.exe`,
          signature: "dW50cnVzdGVkIGNvbW1lbnQ=",
          fileSize: 300_000,
          sha512: sha512(windows),
        }),
        expect.objectContaining({
          platform: "LINUX",
          arch: "X64",
          downloadUrl: `${base}App_1.4.0_amd64.AppImage`,
          signature: null,
          fileSize: 70_000,
          sha512: sha512(linux),
        }),
        expect.objectContaining({
          platform: "MACOS",
          arch: "ARM64",
          downloadUrl: `${base}App%201.4.0-arm64-mac.zip`,
          signature: null,
          fileSize: 1234,
          sha512: sha512(mac),
        }),
      ]),
    );
    expect(release?.entries).toHaveLength(3);
  });

  it("human output names each entry, its outcome and file, and what was skipped", async () => {
    const result = await cli(publishArgs("1.4.0"), { SHIPKEY_API_KEY: f.publishKey });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      [
        "Published Desktop App 1.4.0 (STABLE):",
        "  WINDOWS X64   updated  App_1.4.0_x64-setup.exe",
        "  LINUX X64     updated  App_1.4.0_amd64.AppImage",
        "  MACOS ARM64   updated  App 1.4.0-arm64-mac.zip",
        "Skipped App_1.4.0_x64-setup.exe.sig (signature, read beside its artifact)",
        "Skipped latest.yml (update metadata)",
        "Skipped win-unpacked (directory)",
        "",
      ].join("\n"),
    );
  });

  it("--dry-run prints the request with the key redacted and sends nothing", async () => {
    const result = await cli(publishArgs("1.5.0", "--dry-run"), {
      SHIPKEY_API_KEY: f.publishKey,
    });
    expect(result.code).toBe(0);
    expect(result.stdout + result.stderr).not.toContain(f.publishKey);
    expect(JSON.parse(result.stdout)).toEqual({
      method: "POST",
      url: `${server}/api/releases/publish`,
      headers: { authorization: "Bearer <SHIPKEY_API_KEY>", "content-type": "application/json" },
      body: {
        productSlug: f.product.slug,
        version: "1.5.0",
        channel: "STABLE",
        releaseNotes: "## Fixed\n- crashes\n",
        releases: [
          {
            platform: "WINDOWS",
            arch: "X64",
            downloadUrl: `${base}App_1.4.0_x64-setup.exe`,
            signature: "dW50cnVzdGVkIGNvbW1lbnQ=",
            fileSize: 300_000,
            sha512: sha512(windows),
          },
          {
            platform: "LINUX",
            arch: "X64",
            downloadUrl: `${base}App_1.4.0_amd64.AppImage`,
            fileSize: 70_000,
            sha512: sha512(linux),
          },
          {
            platform: "MACOS",
            arch: "ARM64",
            downloadUrl: `${base}App%201.4.0-arm64-mac.zip`,
            fileSize: 1234,
            sha512: sha512(mac),
          },
        ],
      },
    });
    const versions = (await listReleases(f.db, f.product.slug)).map((r) => r.version);
    expect(versions).not.toContain("1.5.0");
  });

  it("--rollout-percent and --critical publish into a rollout, and the summary says so", async () => {
    const result = await cli(publishArgs("1.6.0", "--rollout-percent", "10", "--critical"), {
      SHIPKEY_API_KEY: f.publishKey,
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Rollout: 10 % of machines\n");
    expect(result.stdout).toContain("Critical: yes");
    const release = (await listReleases(f.db, f.product.slug)).find((r) => r.version === "1.6.0");
    expect(release).toMatchObject({ critical: true, rollout: { percent: 10, state: "rolling" } });
  });

  it("--rollout-step-hours sends a schedule; both rollout options, or one out of range, are refused", async () => {
    const dry = await cli(publishArgs("1.7.0", "--rollout-step-hours", "24", "--dry-run"), {});
    expect(JSON.parse(dry.stdout)).toMatchObject({ body: { rollout: { stepHours: 24 } } });
    const both = await cli(
      publishArgs("1.7.0", "--rollout-percent", "5", "--rollout-step-hours", "24"),
      { SHIPKEY_API_KEY: f.publishKey },
    );
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("not both");
    const high = await cli(publishArgs("1.7.0", "--rollout-percent", "101"), {
      SHIPKEY_API_KEY: f.publishKey,
    });
    expect(high.code).toBe(2);
    expect(high.stderr).toContain("--rollout-percent must be 1 to 100");
  });

  it("a wrong key: the server's error and code on stderr, exit 1", async () => {
    const wrong = "shk_not-a-real-key";
    const json = await cli([...publishArgs("1.6.0"), "--json"], { SHIPKEY_API_KEY: wrong });
    expect(json).toMatchObject({ code: 1, stdout: "" });
    expect(JSON.parse(json.stderr)).toEqual({
      error: "Invalid or missing API key",
      code: "INVALID_API_KEY",
    });
    const human = await cli(publishArgs("1.6.0"), { SHIPKEY_API_KEY: wrong });
    expect(human).toEqual({
      code: 1,
      stdout: "",
      stderr: "shipkey: Invalid or missing API key (INVALID_API_KEY, HTTP 401)\n",
    });
  });

  it("a refusal that names a field: the field in the message", async () => {
    const result = await cli(publishArgs("1.0"), { SHIPKEY_API_KEY: f.publishKey });
    expect(result).toEqual({
      code: 1,
      stdout: "",
      stderr: "shipkey: Invalid version format at version (INVALID_VERSION, HTTP 409)\n",
    });
  });

  it("a key without releases:write: MISSING_SCOPE", async () => {
    const result = await cli([...publishArgs("1.6.0"), "--json"], {
      SHIPKEY_API_KEY: f.readOnlyKey,
    });
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stderr)).toMatchObject({ code: "MISSING_SCOPE" });
  });
});

describe("shipkey publish: local failures", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "shipkey-publish-"));
    writeFileSync(join(dir, "App-1.4.0-mac.zip"), "zip");
    writeFileSync(join(dir, "App-1.4.0.dmg"), "dmg");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const args = (server: string, ...files: string[]) => [
    "publish",
    "--server",
    server,
    "--product",
    "app",
    "--version",
    "1.4.0",
    "--channel",
    "STABLE",
    "--base-url",
    "https://cdn.example.com/app/1.4.0/",
    ...files.map((name) => join(dir, name)),
  ];

  it("an unreachable server: one line, exit 1", async () => {
    const port = await closedPort();
    const result = await cli(args(`http://127.0.0.1:${port}`, "App-1.4.0-mac.zip"), {
      SHIPKEY_API_KEY: "shk_secret-never-printed",
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(`^shipkey: cannot reach http://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED.*\\n$`),
    );
    expect(result.stderr).not.toContain("shk_secret");
  });

  it("a server that never answers: one line after --timeout seconds, exit 1", async () => {
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as AddressInfo;
    try {
      const result = await cli(
        [...args(`http://127.0.0.1:${port}`, "App-1.4.0-mac.zip"), "--timeout", "1"],
        { SHIPKEY_API_KEY: "shk_x" },
      );
      expect(result).toMatchObject({
        code: 1,
        stderr: `shipkey: no answer from http://127.0.0.1:${port} within 1 s\n`,
      });
    } finally {
      silent.close();
    }
  });

  it("two files on one platform/arch: an error naming both, nothing sent", async () => {
    const result = await cli(
      [...args("http://127.0.0.1:9", "App-1.4.0-mac.zip", "App-1.4.0.dmg"), "--json"],
      { SHIPKEY_API_KEY: "shk_x" },
    );
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stderr)).toEqual({
      error:
        "App-1.4.0-mac.zip and App-1.4.0.dmg are both MACOS X64: pass only the updater artifact",
      code: "DUPLICATE_ARTIFACT",
    });
  });

  it("refuses plain http to a remote server and a missing SHIPKEY_API_KEY", async () => {
    const remote = await cli(args("http://shipkey.example.com", "App-1.4.0.dmg"), {
      SHIPKEY_API_KEY: "shk_x",
    });
    expect(remote.code).toBe(2);
    expect(remote.stderr).toContain("--server must use https");
    const noKey = await cli(args("https://shipkey.example.com", "App-1.4.0.dmg"), {
      SHIPKEY_API_KEY: undefined,
    });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain("SHIPKEY_API_KEY is not set");
  });
});

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
