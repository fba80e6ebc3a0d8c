import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { XMLParser } from "fast-xml-parser";
import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { openDatabase } from "../../src/db/database.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { listAudit } from "../../src/domain/audit/audit-log.js";
import { createProduct, requireProduct } from "../../src/domain/products/products.js";
import { findFeedReleases } from "../../src/domain/releases/update-feed.js";
import { listReleases } from "../../src/domain/releases/manage-releases.js";
import { publishRelease } from "../../src/actions/releases.js";
import { testActor } from "../helpers/actions.js";
import { adminAccess } from "../helpers/admin-access.js";
import { createTestDatabase, dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { type Arch, type Channel, type Platform } from "../../src/contracts/vocabulary.js";
import { testEnvironment } from "../helpers/environment.js";

/** base64 of a real SHA-512 digest, as electron-builder writes it. */
const sha512Of = (text: string) => createHash("sha512").update(text).digest("base64");
const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

interface Entry {
  platform: Platform;
  arch: Arch;
  downloadUrl?: string;
  signature?: string | null;
  fileSize?: number | null;
  sha512?: string | null;
}

const entry = (platform: Platform, arch: Arch, overrides: Partial<Entry> = {}): Entry => ({
  platform,
  arch,
  downloadUrl: `https://cdn.example.com/app-${platform}-${arch}.zip`,
  signature: `sig-${platform}-${arch}`,
  fileSize: 1234,
  sha512: sha512Of(`${platform}-${arch}`),
  ...overrides,
});

const everywhere = (): Entry[] =>
  (["WINDOWS", "MACOS", "LINUX"] as const).flatMap((p) =>
    (["X64", "ARM64"] as const).map((a) => entry(p, a)),
  );

describe.each(dialects)("update feeds (%s)", (dialect) => {
  let f: Fixture;
  let products = 0;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => {
    await f.close();
  });

  const get = (url: string, headers: Record<string, string> = {}) =>
    f.app.inject({ method: "GET", url, headers });

  const publish = async (
    productSlug: string,
    version: string,
    channel: Channel = "STABLE",
    releases: Entry[] = everywhere(),
    releaseNotes: string | null = `Notes of ${version}`,
  ) => {
    const response = await f.post(
      "/api/releases/publish",
      { productSlug, version, channel, releaseNotes, releases },
      { authorization: `Bearer ${f.publishKey}` },
    );
    expect(response.statusCode, response.body).toBe(200);
  };

  /** A product of its own per test, so tests never see each other's releases. */
  const newProduct = async (...versions: Array<[string, Channel?]>) => {
    products += 1;
    const { slug } = await createProduct(f.db, {
      slug: `feed-app-${products}`,
      name: "Feed & App",
    });
    for (const [version, channel] of versions) await publish(slug, version, channel);
    return slug;
  };

  const latestVersion = async (slug: string, channel: string, current?: string) => {
    const query = `platform=LINUX&arch=X64&channel=${channel}${current ? `&currentVersion=${encodeURIComponent(current)}` : ""}`;
    const response = await get(`/api/updates/${slug}/latest?${query}`);
    return response.statusCode === 200 ? (response.json().version as string) : response.statusCode;
  };

  describe("Tauri v2 (the updater plugin's RemoteRelease)", () => {
    it("200 with version, notes, pub_date (RFC 3339), url and the stored signature", async () => {
      const slug = await newProduct(["1.0.0"], ["1.1.0"]);
      const response = await get(`/api/updates/${slug}/tauri/darwin/aarch64/1.0.0`);
      expect(response.statusCode).toBe(200);
      expect(response.headers["cache-control"]).toBe("no-cache");
      const body = response.json();
      expect(Object.keys(body).sort()).toEqual([
        "critical",
        "notes",
        "pub_date",
        "signature",
        "url",
        "version",
      ]);
      expect(body).toMatchObject({
        version: "1.1.0",
        notes: "Notes of 1.1.0",
        url: "https://cdn.example.com/app-MACOS-ARM64.zip",
        signature: "sig-MACOS-ARM64",
      });
      expect(body.pub_date).toMatch(rfc3339);
    });

    it("204 when the current version is the newest; a leading v and a percent-encoded + are read", async () => {
      const slug = await newProduct(["1.0.0"], ["1.1.0+build.7"]);
      for (const current of ["1.1.0", "v1.1.0", "1.1.0%2Bbuild.7", "2.0.0"]) {
        const response = await get(`/api/updates/${slug}/tauri/linux/x86_64/${current}`);
        expect(response.statusCode, current).toBe(204);
        expect(response.body).toBe("");
      }
      const older = await get(
        `/api/updates/${slug}/tauri/linux/x86_64/v1.0.0%2Bold?bundle=appimage`,
      );
      expect(older.json().version).toBe("1.1.0+build.7");
    });

    it("offers only entries with a signature, and 204 for i686 and armv7", async () => {
      const slug = await newProduct(["1.0.0"]);
      await publish(slug, "1.2.0", "STABLE", [entry("WINDOWS", "X64", { signature: null })]);
      const response = await get(`/api/updates/${slug}/tauri/windows/x86_64/0.9.0`);
      expect(response.json().version).toBe("1.0.0");
      for (const arch of ["i686", "armv7"]) {
        expect((await get(`/api/updates/${slug}/tauri/windows/${arch}/0.1.0`)).statusCode).toBe(
          204,
        );
      }
    });
  });

  describe("Squirrel.Mac (Electron autoUpdater)", () => {
    it("200 with url, name, notes and pub_date for a newer .zip; never the same or an older version", async () => {
      const slug = await newProduct(["1.0.0"], ["1.1.0"]);
      const response = await get(`/api/updates/${slug}/squirrel-mac/arm64/1.0.0`);
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(Object.keys(body).sort()).toEqual(["name", "notes", "pub_date", "url"]);
      expect(body).toMatchObject({
        url: "https://cdn.example.com/app-MACOS-ARM64.zip",
        name: "1.1.0",
        notes: "Notes of 1.1.0",
      });
      expect(body.pub_date).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
      expect((await get(`/api/updates/${slug}/squirrel-mac/x64/1.1.0`)).statusCode).toBe(204);
      expect((await get(`/api/updates/${slug}/squirrel-mac/x64/1.2.0`)).statusCode).toBe(204);
    });

    it("offers only entries whose URL path ends in .zip", async () => {
      const slug = await newProduct(["1.0.0"]);
      const dmg = { downloadUrl: "https://cdn.example.com/app.dmg?x=.zip" };
      await publish(slug, "2.0.0", "STABLE", [entry("MACOS", "X64", dmg)]);
      const response = await get(`/api/updates/${slug}/squirrel-mac/x64/0.1.0`);
      expect(response.json().name).toBe("1.0.0");
    });
  });

  describe("electron-updater (generic provider YAML)", () => {
    it("{ch}-mac.yml is electron-builder's UpdateInfo with every arch that has a sha512", async () => {
      const slug = await newProduct(["1.0.0"]);
      await publish(slug, "1.1.0", "STABLE", [
        entry("MACOS", "ARM64"),
        entry("MACOS", "X64", { fileSize: null }),
        entry("WINDOWS", "X64"),
      ]);
      await publish(slug, "1.2.0", "STABLE", [entry("MACOS", "X64", { sha512: null })]);
      const response = await get(`/api/updates/${slug}/electron/latest-mac.yml`);
      expect(response.statusCode).toBe(200);
      expect(response.headers["content-type"]).toMatch(/^application\/yaml/);
      expect(response.headers["cache-control"]).toBe("no-cache");
      // YAML 1.1 resolves timestamps, as js-yaml (electron-updater's parser) does: releaseDate
      // must stay a string there.
      const info = parseYaml(response.body, { schema: "yaml-1.1" });
      expect(info).toEqual({
        version: "1.1.0",
        files: [
          { url: "https://cdn.example.com/app-MACOS-X64.zip", sha512: sha512Of("MACOS-X64") },
          {
            url: "https://cdn.example.com/app-MACOS-ARM64.zip",
            sha512: sha512Of("MACOS-ARM64"),
            size: 1234,
          },
        ],
        path: "https://cdn.example.com/app-MACOS-X64.zip",
        sha512: sha512Of("MACOS-X64"),
        releaseDate: expect.stringMatching(rfc3339),
        releaseNotes: "Notes of 1.1.0",
      });
    });

    it("maps each file name to its platform and channel", async () => {
      const slug = await newProduct(
        ["1.0.0"],
        ["1.1.0-beta.1", "BETA"],
        ["1.2.0-alpha.1", "ALPHA"],
      );
      const versionOf = async (file: string) =>
        parseYaml((await get(`/api/updates/${slug}/electron/${file}`)).body).version;
      expect(await versionOf("latest.yml")).toBe("1.0.0");
      expect(await versionOf("beta-linux.yml")).toBe("1.1.0-beta.1");
      expect(await versionOf("alpha-mac.yml")).toBe("1.2.0-alpha.1");
      const windows = parseYaml((await get(`/api/updates/${slug}/electron/latest.yml`)).body);
      expect(windows.files.map((file: { url: string }) => file.url)).toEqual([
        "https://cdn.example.com/app-WINDOWS-X64.zip",
        "https://cdn.example.com/app-WINDOWS-ARM64.zip",
      ]);
    });

    it("404 when no entry has a sha512; 404 for an unknown file name", async () => {
      const slug = await newProduct();
      await publish(slug, "1.0.0", "STABLE", [entry("LINUX", "X64", { sha512: null })]);
      const none = await get(`/api/updates/${slug}/electron/latest-linux.yml`);
      expect(none.statusCode).toBe(404);
      expect(none.json().code).toBe("RELEASE_NOT_FOUND");
      const unknown = await get(`/api/updates/${slug}/electron/stable.yml`);
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json().code).toBe("ROUTE_NOT_FOUND");
    });
  });

  describe("Sparkle 2 appcast", () => {
    const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "@" });
    const appcast = async (slug: string, query = "") => {
      const response = await get(`/api/updates/${slug}/sparkle/macos/arm64/appcast.xml${query}`);
      expect(response.statusCode).toBe(200);
      expect(response.headers["content-type"]).toMatch(/^application\/xml/);
      const doc = parser.parse(response.body);
      const items = doc.rss.channel.item ?? [];
      return {
        doc,
        items: (Array.isArray(items) ? items : [items]) as Array<Record<string, unknown>>,
      };
    };

    it("RSS 2.0 with the Sparkle namespace; each item has its versions, pubDate, notes and enclosure", async () => {
      const slug = await newProduct(["1.0.0"], ["1.1.0-beta.1", "BETA"]);
      const { doc, items } = await appcast(slug, "?channel=BETA");
      expect(doc.rss["@version"]).toBe("2.0");
      expect(doc.rss["@xmlns:sparkle"]).toBe("http://www.andymatuschak.org/xml-namespaces/sparkle");
      expect(doc.rss.channel.title).toBe("Feed & App");
      expect(items.map((i) => i["sparkle:version"])).toEqual(["1.1.0beta.1", "1.0.0"]);
      const [beta, stable] = items;
      expect(beta).toMatchObject({
        "sparkle:shortVersionString": "1.1.0-beta.1",
        "sparkle:channel": "beta",
        description: { "#text": "<p>Notes of 1.1.0-beta.1</p>", "@sparkle:format": "html" },
        enclosure: {
          "@url": "https://cdn.example.com/app-MACOS-ARM64.zip",
          "@length": "1234",
          "@type": "application/octet-stream",
        },
      });
      // "sig-MACOS-ARM64" is no EdDSA signature (64 bytes in base64), so it is not served as
      // sparkle:edSignature; test/releases/publish-tells.test.ts serves a real one.
      expect(beta?.enclosure).not.toHaveProperty("@sparkle:edSignature");
      expect(stable).not.toHaveProperty("sparkle:channel");
      const pubDate = new Date(String(stable?.pubDate));
      expect(pubDate.toUTCString().replace("GMT", "+0000")).toBe(stable?.pubDate);
    });

    it("escapes every value: hostile notes and URLs stay text", async () => {
      const slug = await newProduct();
      const notes = `<script>alert("x")</script> & ]]> 'q'`;
      const downloadUrl = "https://cdn.example.com/a.zip?x=1&y=%22";
      await publish(slug, "1.0.0", "STABLE", [entry("MACOS", "ARM64", { downloadUrl })], notes);
      const { items } = await appcast(slug);
      const description = items[0]?.description as Record<string, string>;
      expect(description["#text"]).toBe(
        "<p>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; ]]&gt; 'q'</p>",
      );
      expect((items[0]?.enclosure as Record<string, string>)["@url"]).toBe(downloadUrl);
    });

    it("lists at most 20 versions, newest first", async () => {
      const slug = await newProduct();
      for (let minor = 0; minor < 22; minor += 1) {
        await publish(slug, `1.${minor}.0`, "STABLE", [entry("MACOS", "ARM64")]);
      }
      const { items } = await appcast(slug);
      expect(items).toHaveLength(20);
      expect(items[0]?.["sparkle:version"]).toBe("1.21.0");
      expect(items[19]?.["sparkle:version"]).toBe("1.2.0");
    });
  });

  describe("generic JSON latest", () => {
    it("matches platform, arch and channel names in any case, as the downloads do", async () => {
      const slug = await newProduct(["1.0.0"]);
      const upper = await get(`/api/updates/${slug}/latest?platform=WINDOWS&arch=ARM64`);
      const lower = await get(`/api/updates/${slug}/latest?platform=windows&arch=arm64`);
      const mixed = await get(
        `/api/updates/${slug}/latest?platform=Windows&arch=Arm64&channel=Stable`,
      );
      expect(upper.statusCode).toBe(200);
      expect(lower.json()).toEqual(upper.json());
      expect(mixed.json()).toEqual(upper.json());
      const download = await get(`/api/downloads/${slug}/1.0.0/windows/arm64`);
      expect(download.statusCode).toBe(302);
    });

    it("200 with every field; 204 when currentVersion is the newest; 404 when there is no release", async () => {
      const slug = await newProduct(["1.0.0"]);
      const response = await get(`/api/updates/${slug}/latest?platform=WINDOWS&arch=ARM64`);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({
        version: "1.0.0",
        channel: "STABLE",
        notes: "Notes of 1.0.0",
        pubDate: expect.stringMatching(rfc3339),
        url: "https://cdn.example.com/app-WINDOWS-ARM64.zip",
        signature: "sig-WINDOWS-ARM64",
        sha512: sha512Of("WINDOWS-ARM64"),
        fileSize: 1234,
        critical: false,
      });
      expect(await latestVersion(slug, "stable", "1.0.0")).toBe(204);
      const empty = await newProduct();
      const none = await get(`/api/updates/${empty}/latest?platform=LINUX&arch=X64`);
      expect(none.statusCode).toBe(404);
      expect(none.json().code).toBe("RELEASE_NOT_FOUND");
    });
  });

  describe("channels nest: ALPHA ⊇ BETA ⊇ STABLE", () => {
    const cases: Array<{ published: Array<[string, Channel]>; expected: Record<string, string> }> =
      [
        {
          published: [
            ["1.0.0", "STABLE"],
            ["1.1.0-beta.1", "BETA"],
            ["1.1.0-alpha.1", "ALPHA"],
          ],
          expected: { stable: "1.0.0", beta: "1.1.0-beta.1", alpha: "1.1.0-beta.1" },
        },
        {
          // A beta user also gets a newer stable release.
          published: [
            ["1.1.0-beta.1", "BETA"],
            ["1.1.0", "STABLE"],
            ["1.2.0-alpha.1", "ALPHA"],
          ],
          expected: { stable: "1.1.0", beta: "1.1.0", alpha: "1.2.0-alpha.1" },
        },
      ];
    it.each(cases)("$expected", async ({ published, expected }) => {
      const slug = await newProduct(...published);
      for (const [channel, version] of Object.entries(expected)) {
        expect(await latestVersion(slug, channel, undefined), channel).toBe(version);
        expect(await latestVersion(slug, channel.toUpperCase(), undefined), channel).toBe(version);
      }
    });
  });

  describe("ordering: full semver precedence", () => {
    const cases: Array<{ versions: string[]; newest: string }> = [
      { versions: ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0"], newest: "1.0.0" },
      { versions: ["1.0.0-beta.11", "1.0.0-beta.2"], newest: "1.0.0-beta.11" },
      { versions: ["1.0.0-rc.1", "1.0.0-beta", "1.0.0-alpha.beta"], newest: "1.0.0-rc.1" },
      { versions: ["2.0.0", "10.0.0", "9.9.9"], newest: "10.0.0" },
      // Build metadata has no precedence: the version string breaks the tie.
      { versions: ["1.0.0+a", "1.0.0+b"], newest: "1.0.0+b" },
    ];
    it.each(cases)("$versions -> $newest", async ({ versions, newest }) => {
      const slug = await newProduct(...versions.map((v): [string, Channel] => [v, "ALPHA"]));
      expect(await latestVersion(slug, "alpha")).toBe(newest);
    });

    const currents: Array<{ current: string; offered: string | number }> = [
      { current: "1.0.0-rc.1", offered: "1.0.0" },
      { current: "1.0.0", offered: 204 },
      { current: "1.0.0+other", offered: 204 },
      { current: "0.9.0", offered: "1.0.0" },
    ];
    it.each(currents)("current $current -> $offered", async ({ current, offered }) => {
      const slug = await newProduct(["1.0.0-rc.1"], ["1.0.0"]);
      expect(await latestVersion(slug, "stable", current)).toBe(offered);
    });
  });

  describe("yank", () => {
    const admin = (action: string, slug: string, version: string) =>
      f.app.inject({
        method: "POST",
        url: `/api/admin/products/${slug}/releases/${version}/${action}`,
        headers: { authorization: `Bearer ${f.publishKey}` },
      });

    it("every feed skips a yanked version from the next request on, and offers it again once restored", async () => {
      const slug = await newProduct(["1.0.0"], ["1.1.0"]);
      const feeds = async () => [
        (await get(`/api/updates/${slug}/tauri/linux/x86_64/0.1.0`)).json().version,
        (await get(`/api/updates/${slug}/squirrel-mac/x64/0.1.0`)).json().name,
        parseYaml((await get(`/api/updates/${slug}/electron/latest-linux.yml`)).body).version,
        (await get(`/api/updates/${slug}/sparkle/windows/x64/appcast.xml`)).body.match(
          /<sparkle:version>([^<]+)</,
        )?.[1],
        await latestVersion(slug, "stable"),
      ];
      expect(await feeds()).toEqual(Array(5).fill("1.1.0"));

      const yanked = await admin("yank", slug, "1.1.0");
      expect(yanked.statusCode).toBe(200);
      expect(yanked.json()).toEqual({
        product: slug,
        version: "1.1.0",
        yankedAt: expect.stringMatching(rfc3339),
      });
      expect(await feeds()).toEqual(Array(5).fill("1.0.0"));
      expect(await latestVersion(slug, "stable", "1.0.0")).toBe(204);

      const { apiKey } = await adminAccess(f, `${slug}@example.com`);
      const listed = await f.app.inject({
        method: "GET",
        url: `/api/admin/products/${slug}/releases`,
        headers: { authorization: `Bearer ${apiKey}` },
      });
      const items = listed.json().items as Array<{ version: string; yankedAt: string | null }>;
      expect(items.find((i) => i.version === "1.1.0")?.yankedAt).toBe(yanked.json().yankedAt);
      expect(items.find((i) => i.version === "1.0.0")?.yankedAt).toBeNull();

      const restored = await admin("unyank", slug, "1.1.0");
      expect(restored.json()).toEqual({ product: slug, version: "1.1.0", yankedAt: null });
      expect(await feeds()).toEqual(Array(5).fill("1.1.0"));

      const audit = (await listAudit(f.db, { limit: 10 })).items
        .filter((e) => e.target.id === `${slug}@1.1.0`)
        .map((e) => e.action);
      // Newest first: the yank and unyank, after the publish that made the version.
      expect(audit).toEqual(["release.unyank", "release.yank", "release.publish"]);
    });

    it("404 RELEASE_NOT_FOUND for an unknown version, PRODUCT_NOT_FOUND for an unknown product", async () => {
      const slug = await newProduct(["1.0.0"]);
      const version = await admin("yank", slug, "9.9.9");
      expect(version.statusCode).toBe(404);
      expect(version.json().code).toBe("RELEASE_NOT_FOUND");
      const product = await admin("yank", "no-such-product", "1.0.0");
      expect(product.statusCode).toBe(404);
      expect(product.json().code).toBe("PRODUCT_NOT_FOUND");
    });
  });

  it("the dashboard's releases page yanks and restores a version, and shows it yanked", async () => {
    const slug = await newProduct(["1.0.0"], ["1.1.0"]);
    const { cookie, csrf } = await adminAccess(f, `dash-${slug}@example.com`);
    const form = (action: string) =>
      f.app.inject({
        method: "POST",
        url: `/admin/releases/${slug}/1.1.0/${action}`,
        headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams({ _csrf: csrf }).toString(),
      });
    const page = async () =>
      (await get(`/admin/releases?product=${slug}`, { cookie })).body.replace(/\s+/g, " ");
    expect(await page()).toContain("Yank from feeds");

    const yanked = await form("yank");
    expect(yanked.statusCode).toBe(303);
    expect(yanked.headers.location).toBe(`/admin/releases?product=${slug}`);
    expect(await latestVersion(slug, "stable")).toBe("1.0.0");
    expect(await page()).toMatch(/badge-yanked">yanked</);
    expect(await page()).toContain("Restore to feeds");

    expect((await form("unyank")).statusCode).toBe(303);
    expect(await latestVersion(slug, "stable")).toBe("1.1.0");
    expect(await page()).not.toContain("badge-yanked");
  });

  describe("bad input: a 4xx JSON error, never a 5xx", () => {
    // routed: false for what fails before routing (no feed hook runs).
    const rows: Array<{
      url: string;
      status: number;
      code: string;
      field?: string;
      fields?: string[];
      routed?: false;
    }> = [
      { url: "/api/updates/nope/tauri/linux/x86_64/1.0.0", status: 404, code: "PRODUCT_NOT_FOUND" },
      { url: "/api/updates/nope/tauri/linux/i686/1.0.0", status: 404, code: "PRODUCT_NOT_FOUND" },
      { url: "/api/updates/@/tauri/linux/x86_64/1.0.0", status: 404, code: "PRODUCT_NOT_FOUND" },
      {
        url: "/api/updates/{p}/tauri/macos/x86_64/1.0.0",
        status: 400,
        code: "INVALID_PLATFORM_ARCH",
        field: "target",
      },
      {
        url: "/api/updates/{p}/tauri/linux/x64/1.0.0",
        status: 400,
        code: "INVALID_PLATFORM_ARCH",
        field: "arch",
      },
      {
        url: "/api/updates/{p}/tauri/linux/__proto__/1.0.0",
        status: 400,
        code: "INVALID_PLATFORM_ARCH",
        field: "arch",
      },
      {
        url: "/api/updates/{p}/tauri/linux/x86_64/1.0",
        status: 400,
        code: "INVALID_FIELD_VALUE",
        field: "currentVersion",
      },
      {
        url: "/api/updates/{p}/tauri/linux/x86_64/vv1.0.0",
        status: 400,
        code: "INVALID_FIELD_VALUE",
        field: "currentVersion",
      },
      {
        url: "/api/updates/{p}/tauri/linux/x86_64/1.0.0?channel=nightly",
        status: 400,
        code: "INVALID_CHANNEL",
        field: "channel",
      },
      {
        url: "/api/updates/{p}/tauri/linux/x86_64/1.0.0?channel=a&channel=b",
        status: 400,
        code: "INVALID_FIELD_VALUE",
        field: "channel",
      },
      {
        url: "/api/updates/{p}/squirrel-mac/x86_64/1.0.0",
        status: 400,
        code: "INVALID_PLATFORM_ARCH",
        field: "arch",
      },
      {
        url: "/api/updates/{p}/squirrel-mac/x64/01.0.0",
        status: 400,
        code: "INVALID_FIELD_VALUE",
        field: "currentVersion",
      },
      { url: "/api/updates/nope/squirrel-mac/x64/1.0.0", status: 404, code: "PRODUCT_NOT_FOUND" },
      { url: "/api/updates/{p}/electron/latest-win.yml", status: 404, code: "ROUTE_NOT_FOUND" },
      { url: "/api/updates/nope/electron/latest.yml", status: 404, code: "PRODUCT_NOT_FOUND" },
      {
        url: "/api/updates/{p}/sparkle/linux/x64/appcast.xml",
        status: 400,
        code: "INVALID_PLATFORM_ARCH",
        field: "platform",
      },
      {
        url: "/api/updates/{p}/sparkle/macos/aarch64/appcast.xml",
        status: 400,
        code: "INVALID_PLATFORM_ARCH",
        field: "arch",
      },
      { url: "/api/updates/{p}/sparkle/macos/x64/appcast.xml?channel=", status: 200, code: "" },
      {
        url: "/api/updates/{p}/sparkle/macos/x64/appcast.xml?channel=dev",
        status: 400,
        code: "INVALID_CHANNEL",
        field: "channel",
      },
      {
        url: "/api/updates/nope/sparkle/macos/x64/appcast.xml",
        status: 404,
        code: "PRODUCT_NOT_FOUND",
      },
      {
        url: "/api/updates/{p}/latest?platform=LINUX",
        status: 400,
        code: "MISSING_REQUIRED_FIELDS",
        fields: ["arch"],
      },
      {
        url: "/api/updates/{p}/latest?platform=linux64&arch=X64",
        status: 400,
        code: "INVALID_PLATFORM_ARCH",
        field: "platform",
      },
      {
        url: "/api/updates/{p}/latest?platform=LINUX&arch=X64&currentVersion=x",
        status: 400,
        code: "INVALID_FIELD_VALUE",
        field: "currentVersion",
      },
      {
        url: "/api/updates/{p}/latest?platform=LINUX&arch=X64&channel=BETA2",
        status: 400,
        code: "INVALID_CHANNEL",
        field: "channel",
      },
      {
        url: "/api/updates/nope/latest?platform=LINUX&arch=X64",
        status: 404,
        code: "PRODUCT_NOT_FOUND",
      },
      {
        url: "/api/updates/{p}/sparkle/macos/x64/appcast.xml?channel=constructor",
        status: 400,
        code: "INVALID_CHANNEL",
        field: "channel",
      },
      {
        url: "/api/updates/{p}/latest?platform=toString&arch=X64",
        status: 400,
        code: "INVALID_PLATFORM_ARCH",
        field: "platform",
      },
      {
        url: "/api/updates/{p}/tauri/linux/x86_64/%E0%A4%A",
        status: 400,
        code: "BAD_REQUEST",
        routed: false,
      },
      {
        url: `/api/updates/{p}/latest?platform=LINUX&arch=X64&currentVersion=${"1.".repeat(5000)}0`,
        status: 400,
        code: "FIELD_TOO_LONG",
        field: "currentVersion",
      },
      {
        // Longer than Fastify's maxParamLength: refused before routing.
        url: `/api/updates/{p}/tauri/linux/x86_64/${"1".repeat(300)}`,
        status: 400,
        code: "BAD_REQUEST",
        routed: false,
      },
      {
        url: "/api/updates/{p}/electron/%00.yml",
        status: 400,
        code: "INVALID_FIELD_VALUE",
        field: "file",
      },
    ];
    it.each(rows)("$url -> $status $code", async ({ url, status, code, field, fields, routed }) => {
      const response = await get(url.replace("{p}", f.product.slug));
      expect(response.statusCode).toBe(status);
      if (status >= 400) {
        const named = { ...(field && { field }), ...(fields && { fields }) };
        expect(response.json()).toEqual({ error: expect.any(String), code, ...named });
        if (routed !== false) expect(response.headers["cache-control"]).toBe("no-cache");
      }
    });
  });

  it("finds the newest offered version past many that are not, and lists 20 in the appcast", async () => {
    const slug = await newProduct();
    // 45 versions, published oldest first; only 1.0.0-1.0.3 are signed (Tauri needs it), and
    // 1.0.44 is yanked.
    for (let patch = 0; patch < 45; patch++) {
      const signature = patch <= 3 ? `sig-${patch}` : null;
      await publish(slug, `1.0.${patch}`, "STABLE", [
        entry("LINUX", "X64", { signature }),
        entry("MACOS", "X64"),
      ]);
    }
    const { apiKey } = await adminAccess(f, `pages-${slug}@example.com`);
    const yank = await f.app.inject({
      method: "POST",
      url: `/api/admin/products/${slug}/releases/1.0.44/yank`,
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      payload: "{}",
    });
    expect(yank.statusCode, yank.body).toBe(200);
    const tauri = await get(`/api/updates/${slug}/tauri/linux/x86_64/1.0.0`);
    expect(tauri.json().version).toBe("1.0.3");
    expect((await get(`/api/updates/${slug}/tauri/linux/x86_64/1.0.3`)).statusCode).toBe(204);
    expect(await latestVersion(slug, "stable")).toBe("1.0.43");
    expect(await latestVersion(slug, "stable", "1.0.43")).toBe(204);
    const appcast = await get(`/api/updates/${slug}/sparkle/macos/x64/appcast.xml`);
    expect(appcast.statusCode).toBe(200);
    const titles = [...appcast.body.matchAll(/<title>(1\.0\.\d+)<\/title>/g)].map((m) => m[1]);
    expect(titles).toEqual(Array.from({ length: 20 }, (_, i) => `1.0.${43 - i}`));
  });

  it("electron-updater lists only the newest version's files when it has fewer arches than the next", async () => {
    const slug = await newProduct();
    await publish(slug, "1.0.0", "STABLE", [entry("MACOS", "X64"), entry("MACOS", "ARM64")]);
    await publish(slug, "1.1.0", "STABLE", [entry("MACOS", "ARM64")]);
    const yaml = parseYaml((await get(`/api/updates/${slug}/electron/latest-mac.yml`)).body, {
      version: "1.1",
    }) as { version: string; files: Array<{ url: string }> };
    expect(yaml.version).toBe("1.1.0");
    expect(yaml.files.map((file) => file.url)).toEqual([
      "https://cdn.example.com/app-MACOS-ARM64.zip",
    ]);
  });

  it("every arch, .zip only: versions refused by isZip give way to older ones on the last page", async () => {
    const slug = await newProduct();
    await publish(slug, "0.0.1", "STABLE", [entry("MACOS", "X64"), entry("MACOS", "ARM64")]);
    await publish(slug, "0.0.2", "STABLE", [entry("MACOS", "ARM64")]);
    const notZip = { downloadUrl: "https://cdn.example.com/app.dmg?file=.zip" };
    await publish(slug, "1.0.0", "STABLE", [entry("MACOS", "X64", notZip)]);
    await publish(slug, "2.0.0", "STABLE", [entry("MACOS", "X64")]);
    const product = await requireProduct(f.db, slug);
    const query = {
      product,
      publishedUpTo: null,
      platform: "MACOS",
      channel: "STABLE",
      audience: "client",
      now: Date.now(),
    } as const;
    const versions = async (count: number) =>
      (await findFeedReleases(f.db, { ...query, updateFeed: "squirrelMac" }, count)).map(
        (release) => [release.version, release.entries.map((e) => e.arch)],
      );
    expect(await versions(2)).toEqual([
      ["2.0.0", ["X64"]],
      ["0.0.2", ["ARM64"]],
    ]);
    expect(await versions(3)).toEqual([
      ["2.0.0", ["X64"]],
      ["0.0.2", ["ARM64"]],
      ["0.0.1", ["X64", "ARM64"]],
    ]);
  });

  it("rows written by hand that publish would refuse are skipped, not a 500", async () => {
    const slug = await newProduct(["1.0.0"]);
    const product = await f.db
      .selectFrom("products")
      .select("id")
      .where("slug", "=", slug)
      .executeTakeFirstOrThrow();
    const now = Date.now();
    await f.db
      .insertInto("release_versions")
      .values({
        id: `ver_hand_${slug}`,
        product_id: product.id,
        version: "2.0",
        channel: "STABLE",
        release_notes: null,
        created_at: now,
        updated_at: now,
        yanked_at: null,
      })
      .execute();
    await f.db
      .insertInto("release_artifacts")
      .values({
        id: `art_hand_${slug}`,
        version_id: `ver_hand_${slug}`,
        platform: "MACOS",
        arch: "X64",
        download_url: "not a url.zip",
        signature: "s",
        file_size: null,
        sha512: null,
        revision: 1,
        created_at: now,
        updated_at: now,
      })
      .execute();
    expect((await get(`/api/updates/${slug}/squirrel-mac/x64/0.1.0`)).json().name).toBe("1.0.0");
    expect(await latestVersion(slug, "stable")).toBe("1.0.0");
  });

  describe("caching: weak ETag and If-None-Match on the documents", () => {
    const documents = (slug: string) => [
      `/api/updates/${slug}/electron/latest.yml`,
      `/api/updates/${slug}/sparkle/windows/arm64/appcast.xml`,
    ];
    it.each([0, 1])(
      "document %i: 304 while unchanged, 200 with a new ETag after a publish",
      async (i) => {
        const slug = await newProduct(["1.0.0"]);
        const url = documents(slug)[i] ?? "";
        const first = await get(url);
        const etag = String(first.headers.etag);
        expect(etag).toMatch(/^W\/"[^"]+"$/);
        const again: LightMyRequestResponse = await get(url, { "if-none-match": etag });
        expect(again.statusCode).toBe(304);
        expect(again.body).toBe("");
        expect(again.headers.etag).toBe(etag);
        expect((await get(url, { "if-none-match": `"other", ${etag.slice(2)}` })).statusCode).toBe(
          304,
        );
        await publish(slug, "1.1.0");
        const changed = await get(url, { "if-none-match": etag });
        expect(changed.statusCode).toBe(200);
        expect(changed.headers.etag).not.toBe(etag);
      },
    );
  });

  describe("publish: the optional sha512", () => {
    const send = (sha512: unknown) =>
      f.post(
        "/api/releases/publish",
        {
          productSlug: f.product.slug,
          version: "5.0.0",
          channel: "STABLE",
          releases: [{ ...entry("LINUX", "X64"), sha512 }],
        },
        { authorization: `Bearer ${f.publishKey}` },
      );

    it("is stored and handed out", async () => {
      expect((await send(sha512Of("x"))).statusCode).toBe(200);
      const response = await get(`/api/updates/${f.product.slug}/latest?platform=LINUX&arch=X64`);
      expect(response.json().sha512).toBe(sha512Of("x"));
    });

    const bad: Array<{ value: unknown; code: string }> = [
      { value: createHash("sha256").update("x").digest("base64"), code: "INVALID_FIELD_VALUE" },
      { value: createHash("sha512").update("x").digest("hex"), code: "INVALID_FIELD_VALUE" },
      { value: sha512Of("x").replace(/=+$/, ""), code: "INVALID_FIELD_VALUE" },
      { value: `${sha512Of("x").slice(0, 85)}B==`, code: "INVALID_FIELD_VALUE" },
      { value: `${sha512Of("x")} `, code: "INVALID_FIELD_VALUE" },
      { value: 12, code: "INVALID_FIELD_TYPE" },
    ];
    it.each(bad)("400 $code for $value", async ({ value, code }) => {
      const response = await send(value);
      expect(response.statusCode).toBe(400);
      expect(response.json().code).toBe(code);
      expect(response.json().error).toMatch(/^releases\[0\]\.sha512 /);
    });
  });
});

describe.each(dialects)("shipkey releases yank|unyank (%s)", (dialect) => {
  it("withdraws and restores a version, audited as the CLI's user", async () => {
    const testDatabase = await createTestDatabase(dialect);
    const database = await openDatabase(testDatabase.url);
    try {
      await migrateToLatest(database.db);
      const product = await createProduct(database.db, { slug: "cli-feed", name: "CLI Feed" });
      await publishRelease(database.db, testActor, product, {
        version: "2.0.0",
        channel: "STABLE",
        releaseNotes: null,
        entries: [entry("LINUX", "X64") as Required<Entry> & { downloadUrl: string }],
      });
      const cli = async (...args: string[]) => {
        const { stdout } = await promisify(execFile)(
          process.execPath,
          ["bin/shipkey.js", "releases", ...args, "--product", "cli-feed", "--version", "2.0.0"],
          { env: testEnvironment({ DATABASE_URL: testDatabase.url }) },
        );
        return stdout;
      };
      const yanked = JSON.parse(await cli("yank", "--json"));
      expect(yanked).toEqual({
        product: "cli-feed",
        version: "2.0.0",
        yankedAt: expect.stringMatching(rfc3339),
      });
      const [listed] = await listReleases(database.db, "cli-feed");
      expect(listed?.yankedAt).toBe(yanked.yankedAt);
      expect(await cli("unyank")).toMatch(/yankedAt\s+-/);
      expect((await listReleases(database.db, "cli-feed"))[0]?.yankedAt).toBeNull();
      const actions = (await listAudit(database.db, { limit: 5 })).items.map((e) => [
        e.action,
        e.actor.type,
      ]);
      expect(actions).toEqual([
        ["release.unyank", "cli"],
        ["release.yank", "cli"],
        ["release.publish", "cli"],
      ]);
    } finally {
      await database.close();
      await testDatabase.drop();
    }
  });
});
