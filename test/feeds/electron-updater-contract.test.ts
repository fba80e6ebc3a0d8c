import { createHash } from "node:crypto";
import type { RequestOptions } from "node:http";
import { HttpError, type UpdateInfo } from "builder-util-runtime";
import type { AppUpdater, ResolvedUpdateFileInfo } from "electron-updater";
import { MacUpdater } from "electron-updater/out/MacUpdater.js";
import type { ElectronHttpExecutor } from "electron-updater/out/electronHttpExecutor.js";
import { GenericProvider } from "electron-updater/out/providers/GenericProvider.js";
import {
  findFile,
  parseUpdateInfo,
  resolveFiles,
  type ProviderPlatform,
} from "electron-updater/out/providers/Provider.js";
import semver from "semver";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createProduct } from "../../src/domain/products/products.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { type Arch, type Channel, type Platform } from "../../src/contracts/vocabulary.js";

/**
 * The electron feed read by electron-updater's own code, which runs in Node without Electron:
 * GenericProvider (channel file names, URL building, the no-cache query, its 404 handling),
 * parseUpdateInfo (js-yaml), resolveFiles (checksums required, URLs against the feed), and the
 * file choice each platform's updater makes (findFile, MacUpdater.filterFilesForArch). Requests go
 * to the real app through inject().
 */

/** MacUpdater's own arch filter (a protected static; nothing of Electron is constructed). */
class MacArchFilter extends MacUpdater {
  static forMac(files: ResolvedUpdateFileInfo[], arm64Mac: boolean): ResolvedUpdateFileInfo[] {
    return this.filterFilesForArch(files, arm64Mac);
  }
}

/** What electron-builder names each build, and the bytes the test pretends it holds. */
const artifacts: Record<Platform, Record<Arch, string>> = {
  WINDOWS: { X64: "App Setup {v}.exe", ARM64: "App Setup {v}-arm64.exe" },
  MACOS: { X64: "App-{v}-mac.zip", ARM64: "App-{v}-arm64-mac.zip" },
  LINUX: { X64: "App-{v}.AppImage", ARM64: "App-{v}-arm64.AppImage" },
};
const bytesOf = (version: string, platform: Platform, arch: Arch) =>
  `${version} ${platform} ${arch} build`;
const sha512Of = (content: string) => createHash("sha512").update(content).digest("base64");
const cdn = (version: string, platform: Platform, arch: Arch) =>
  `https://cdn.example.com/app/${version}/${encodeURIComponent(artifacts[platform][arch].replace("{v}", version))}`;

/** Notes with everything YAML could misread: colons, hashes, quotes, a document marker. */
const trickyNotes =
  "## 1.1: faster\n- fixes #12: 'quotes' and \"double\"\n---\n- key: value\n  indented: yes\n@at &anchor *alias";

describe.each(dialects)("electron-updater reads the electron feed (%s)", (dialect) => {
  let f: Fixture;
  let slug: string;
  const requested: string[] = [];
  const savedArch = process.env.TEST_UPDATER_ARCH;

  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ slug } = await createProduct(f.db, { slug: "electron-app", name: "Electron App" }));
    await publish("1.0.0", "STABLE", "Notes of 1.0.0");
    await publish("1.1.0", "STABLE", trickyNotes);
    await publish("1.2.0-beta.1", "BETA", null);
    // A newer stable without checksums: never in the electron feed.
    await publish("1.3.0", "STABLE", null, { withSha512: false });
  });
  afterAll(async () => {
    await f?.close();
  });
  afterEach(() => {
    if (savedArch === undefined) delete process.env.TEST_UPDATER_ARCH;
    else process.env.TEST_UPDATER_ARCH = savedArch;
  });

  async function publish(
    version: string,
    channel: Channel,
    releaseNotes: string | null,
    { withSha512 = true } = {},
  ): Promise<void> {
    const releases = (["WINDOWS", "MACOS", "LINUX"] as const).flatMap((platform) =>
      (["X64", "ARM64"] as const).map((arch) => ({
        platform,
        arch,
        downloadUrl: cdn(version, platform, arch),
        fileSize: bytesOf(version, platform, arch).length,
        sha512: withSha512 ? sha512Of(bytesOf(version, platform, arch)) : null,
      })),
    );
    const response = await f.post(
      "/api/releases/publish",
      { productSlug: slug, version, channel, releaseNotes, releases },
      { authorization: `Bearer ${f.publishKey}` },
    );
    expect(response.statusCode, response.body).toBe(200);
  }

  /** builder-util-runtime's HttpExecutor.request, answered by the app in-process. */
  const executor: Pick<ElectronHttpExecutor, "request"> = {
    request: async (options: RequestOptions) => {
      const path = options.path ?? "/";
      requested.push(path);
      const response = await f.app.inject({ method: "GET", url: path });
      if (response.statusCode >= 400) {
        throw new HttpError(response.statusCode, response.statusMessage, response.body);
      }
      return response.body;
    },
  };

  /** The provider electron-updater builds from `publish: {provider: generic, url}`. */
  function provider(platform: ProviderPlatform, channel: string | null = null) {
    const updater = { channel, isAddNoCacheQuery: true };
    return new GenericProvider(
      { provider: "generic", url: `https://updates.example.com/api/updates/${slug}/electron` },
      updater as unknown as AppUpdater,
      {
        executor: executor as ElectronHttpExecutor,
        platform,
        isUseMultipleRangeRequest: false,
      },
    );
  }

  const lastPath = () => new URL(requested.at(-1) ?? "", "https://x").pathname;

  function expectUpdateInfo(
    info: UpdateInfo,
    version: string,
    platform: Platform,
    arches: Arch[],
    notes: string | null,
  ) {
    expect(info.version).toBe(version);
    expect(semver.valid(info.version)).toBe(version);
    expect(info.files).toEqual(
      arches.map((arch) => ({
        url: cdn(version, platform, arch),
        sha512: sha512Of(bytesOf(version, platform, arch)),
        size: bytesOf(version, platform, arch).length,
      })),
    );
    // The deprecated single-file fields name the first file, as electron-builder writes them.
    expect(info.path).toBe(info.files[0]?.url);
    expect(info.sha512).toBe(info.files[0]?.sha512);
    expect(typeof info.releaseDate).toBe("string");
    expect(new Date(info.releaseDate).toISOString()).toBe(info.releaseDate);
    if (notes === null) expect(info.releaseNotes).toBeUndefined();
    else expect(info.releaseNotes).toBe(notes);
  }

  it("Windows: latest.yml with a no-cache query, both arches, checksums, and the installer NsisUpdater picks", async () => {
    const windows = provider("win32");
    const info = await windows.getLatestVersion();
    expect(lastPath()).toBe(`/api/updates/${slug}/electron/latest.yml`);
    expect(requested.at(-1)).toMatch(/\?noCache=[0-9a-v]+$/);
    expectUpdateInfo(info, "1.1.0", "WINDOWS", ["X64", "ARM64"], trickyNotes);

    const files = windows.resolveFiles(info);
    expect(files.map((file) => file.url.href)).toEqual([
      cdn("1.1.0", "WINDOWS", "X64"),
      cdn("1.1.0", "WINDOWS", "ARM64"),
    ]);
    // NsisUpdater: findFile(files, "exe"): the file naming this process's arch, else the first.
    const picked = findFile(files, "exe");
    const arch = process.arch === "arm64" ? "ARM64" : "X64";
    expect(picked?.url.href).toBe(cdn("1.1.0", "WINDOWS", arch));
    expect(picked?.info.sha512).toBe(sha512Of(bytesOf("1.1.0", "WINDOWS", arch)));
  });

  it("macOS: latest-mac.yml; MacUpdater takes the arm64 zip on Apple silicon and the x64 zip on Intel", async () => {
    const mac = provider("darwin");
    const info = await mac.getLatestVersion();
    expect(lastPath()).toBe(`/api/updates/${slug}/electron/latest-mac.yml`);
    expectUpdateInfo(info, "1.1.0", "MACOS", ["X64", "ARM64"], trickyNotes);
    const files = mac.resolveFiles(info);
    for (const [arm64Mac, arch] of [
      [true, "ARM64"],
      [false, "X64"],
    ] as const) {
      const zip = findFile(MacArchFilter.forMac(files, arm64Mac), "zip", ["pkg", "dmg"]);
      expect(zip?.url.href, `arm64 Mac: ${arm64Mac}`).toBe(cdn("1.1.0", "MACOS", arch));
      expect(zip?.info.sha512).toBe(sha512Of(bytesOf("1.1.0", "MACOS", arch)));
    }
  });

  it.each([
    ["x64", "latest-linux.yml", "X64"],
    ["arm64", "latest-linux-arm64.yml", "ARM64"],
  ] as const)(
    "Linux %s: electron-updater asks for %s and its AppImage updater gets only its own arch",
    async (processArch, file, arch) => {
      process.env.TEST_UPDATER_ARCH = processArch;
      const linux = provider("linux");
      const info = await linux.getLatestVersion();
      expect(lastPath()).toBe(`/api/updates/${slug}/electron/${file}`);
      expectUpdateInfo(info, "1.1.0", "LINUX", [arch], trickyNotes);
      const appImage = findFile(linux.resolveFiles(info), "AppImage", ["rpm", "deb", "pacman"]);
      expect(appImage?.url.href).toBe(cdn("1.1.0", "LINUX", arch));
    },
  );

  it.each([
    ["win32", "beta.yml"],
    ["darwin", "beta-mac.yml"],
    ["linux", "beta-linux.yml"],
  ] as const)(
    "autoUpdater.channel = 'beta' on %s reads %s: the newest beta, or a newer stable",
    async (platform, file) => {
      process.env.TEST_UPDATER_ARCH = "x64";
      const info = await provider(platform, "beta").getLatestVersion();
      expect(lastPath()).toBe(`/api/updates/${slug}/electron/${file}`);
      expect(info.version).toBe("1.2.0-beta.1");
      expect(info.releaseNotes).toBeUndefined();
      // electron-updater offers it to a 1.1.0 user: semver.gt, prerelease precedence included.
      expect(semver.gt(info.version, "1.1.0")).toBe(true);
      expect(semver.gt(info.version, "1.2.0-alpha.9")).toBe(true);
    },
  );

  it("the YAML as served parses the same with parseUpdateInfo and resolves against the feed URL", async () => {
    const url = `/api/updates/${slug}/electron/latest-mac.yml`;
    const response = await f.app.inject({ method: "GET", url });
    expect(response.statusCode).toBe(200);
    const feedUrl = new URL(`https://updates.example.com${url}`);
    const info = parseUpdateInfo(response.body, "latest-mac.yml", feedUrl);
    expectUpdateInfo(info, "1.1.0", "MACOS", ["X64", "ARM64"], trickyNotes);
    const files = resolveFiles(
      info,
      new URL(`https://updates.example.com/api/updates/${slug}/electron/`),
    );
    expect(files.map((file) => file.url.href)).toEqual(info.files.map((file) => file.url));
  });

  it("a product without checksummed builds: electron-updater reports the missing channel file, so no update", async () => {
    const { slug: bare } = await createProduct(f.db, { slug: "no-sha-app", name: "No sha" });
    const response = await f.post(
      "/api/releases/publish",
      {
        productSlug: bare,
        version: "1.0.0",
        channel: "STABLE",
        releases: [
          { platform: "WINDOWS", arch: "X64", downloadUrl: cdn("1.0.0", "WINDOWS", "X64") },
        ],
      },
      { authorization: `Bearer ${f.publishKey}` },
    );
    expect(response.statusCode).toBe(200);
    const bareProvider = new GenericProvider(
      { provider: "generic", url: `https://updates.example.com/api/updates/${bare}/electron` },
      { channel: null, isAddNoCacheQuery: false } as unknown as AppUpdater,
      {
        executor: executor as ElectronHttpExecutor,
        platform: "win32",
        isUseMultipleRangeRequest: false,
      },
    );
    await expect(bareProvider.getLatestVersion()).rejects.toMatchObject({
      code: "ERR_UPDATER_CHANNEL_FILE_NOT_FOUND",
    });
  });
});
