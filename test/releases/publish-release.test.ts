import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey, revokeApiKey } from "../../src/domain/api-keys/api-keys.js";
import { publishRelease } from "../../src/actions/releases.js";
import { testActor } from "../helpers/actions.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { type Platform } from "../../src/contracts/vocabulary.js";

const entry = (overrides: Record<string, unknown> = {}) => ({
  platform: "WINDOWS",
  arch: "X64",
  downloadUrl: "https://downloads.example.com/app-1.0.0-win-x64.exe",
  signature: "dW50cnVzdGVkIGNvbW1lbnQ6IHNpZ25hdHVyZQ==",
  fileSize: 104857600,
  ...overrides,
});

describe.each(dialects)("POST /api/releases/publish (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => {
    await f.close();
  });

  const publish = (body: unknown, key: string | null = f.publishKey) =>
    f.post("/api/releases/publish", body, key === null ? {} : { authorization: `Bearer ${key}` });
  const valid = (overrides: Record<string, unknown> = {}) => ({
    productSlug: f.product.slug,
    version: "1.0.0",
    channel: "STABLE",
    releaseNotes: "## Fixed\n- crashes",
    releases: [entry()],
    ...overrides,
  });

  describe("spec section 7, Publish: one test per row", () => {
    const rows: Array<{
      row: string;
      status: number;
      error: string;
      code: string;
      field?: string;
      fields?: string[];
      request: () => Promise<{ body: unknown; key?: string | null }>;
    }> = [
      {
        row: "401 Invalid or missing API key: no Authorization header",
        status: 401,
        error: "Invalid or missing API key",
        code: "INVALID_API_KEY",
        request: async () => ({ body: valid(), key: null }),
      },
      {
        row: "401 Invalid or missing API key: key invalid",
        status: 401,
        error: "Invalid or missing API key",
        code: "INVALID_API_KEY",
        request: async () => ({ body: valid(), key: "shk_not-a-real-key" }),
      },
      {
        row: "403 Missing required scope: key lacks releases:write",
        status: 403,
        error: "Missing required scope",
        code: "MISSING_SCOPE",
        request: async () => ({ body: valid(), key: f.readOnlyKey }),
      },
      {
        row: "400 Missing required fields: productSlug, version, channel or releases missing",
        status: 400,
        error: "Missing required fields",
        code: "MISSING_REQUIRED_FIELDS",
        fields: ["channel"],
        request: async () => ({ body: valid({ channel: undefined }) }),
      },
      {
        row: "400 Invalid channel: channel not STABLE, BETA or ALPHA",
        status: 400,
        error: "Invalid channel",
        code: "INVALID_CHANNEL",
        field: "channel",
        request: async () => ({ body: valid({ channel: "NIGHTLY" }) }),
      },
      {
        row: "400 Invalid release entry: an entry lacks platform, arch or downloadUrl",
        status: 400,
        error: "Invalid release entry",
        code: "INVALID_RELEASE_ENTRY",
        field: "releases[0].arch",
        request: async () => ({ body: valid({ releases: [entry({ arch: undefined })] }) }),
      },
      {
        row: "400 Invalid platform/arch: platform or arch value not recognized",
        status: 400,
        error: "Invalid platform/arch",
        code: "INVALID_PLATFORM_ARCH",
        field: "releases[0].platform",
        request: async () => ({ body: valid({ releases: [entry({ platform: "BEOS" })] }) }),
      },
      {
        row: "400 Invalid download URL: URL malformed or not HTTPS",
        status: 400,
        error: "Invalid download URL",
        code: "INVALID_DOWNLOAD_URL",
        field: "releases[0].downloadUrl",
        request: async () => ({
          body: valid({ releases: [entry({ downloadUrl: "http://plain.example.com/a" })] }),
        }),
      },
      {
        row: "409 Invalid version format: version is not valid semver",
        status: 409,
        error: "Invalid version format",
        code: "INVALID_VERSION",
        field: "version",
        request: async () => ({ body: valid({ version: "1.0" }) }),
      },
      {
        row: "404 Product not found: no product matches the slug",
        status: 404,
        error: "Product not found",
        code: "PRODUCT_NOT_FOUND",
        request: async () => ({ body: valid({ productSlug: "no-such-product" }) }),
      },
    ];

    it.each(rows)("$row", async ({ status, error, code, field, fields, request }) => {
      const { body, key } = await request();
      const response = await publish(body, key === undefined ? f.publishKey : key);
      expect(response.statusCode).toBe(status);
      expect(response.headers["content-type"]).toMatch(/^application\/json/);
      expect(response.json()).toEqual({
        error,
        code,
        ...(field && { field }),
        ...(fields && { fields }),
      });
    });
  });

  describe("spec section 4.1 rules", () => {
    it("rule 1+2: a new entry is created; publishing it again replaces it and reports updated", async () => {
      const body = valid({
        version: "2.0.0",
        releases: [entry(), entry({ platform: "MACOS", arch: "ARM64" })],
      });
      const first = await publish(body);
      expect(first.statusCode).toBe(200);
      expect(first.json()).toEqual({
        product: "Desktop App",
        version: "2.0.0",
        channel: "STABLE",
        releases: [
          { platform: "WINDOWS", arch: "X64", status: "created" },
          { platform: "MACOS", arch: "ARM64", status: "created" },
        ],
      });
      const second = await publish(
        valid({
          version: "2.0.0",
          releases: [
            entry({ platform: "LINUX" }),
            entry({ downloadUrl: "https://cdn.example.com/new.exe" }),
          ],
        }),
      );
      expect(second.json().releases).toEqual([
        { platform: "LINUX", arch: "X64", status: "created" },
        { platform: "WINDOWS", arch: "X64", status: "updated" },
      ]);
      const stored = await f.db
        .selectFrom("release_artifacts")
        .innerJoin("release_versions", "release_versions.id", "release_artifacts.version_id")
        .select(["platform", "arch", "download_url"])
        .where("release_versions.version", "=", "2.0.0")
        .orderBy("platform")
        .execute();
      expect(stored).toEqual([
        { platform: "LINUX", arch: "X64", download_url: entry().downloadUrl },
        { platform: "MACOS", arch: "ARM64", download_url: entry().downloadUrl },
        { platform: "WINDOWS", arch: "X64", download_url: "https://cdn.example.com/new.exe" },
      ]);
    });

    it("a leading v is stripped from the version", async () => {
      const response = await publish(valid({ version: "v3.1.4" }));
      expect(response.json().version).toBe("3.1.4");
    });

    it("build metadata is kept and is part of the version's identity", async () => {
      const a = await publish(valid({ version: "4.0.0+build.7" }));
      const b = await publish(valid({ version: "4.0.0+build.8" }));
      expect(a.json()).toMatchObject({
        version: "4.0.0+build.7",
        releases: [{ status: "created" }],
      });
      expect(b.json()).toMatchObject({
        version: "4.0.0+build.8",
        releases: [{ status: "created" }],
      });
    });

    it("v1.0.0 and 1.0.0 are the same version", async () => {
      await publish(valid({ version: "5.0.0" }));
      const again = await publish(valid({ version: "v5.0.0" }));
      expect(again.json().releases[0].status).toBe("updated");
    });

    it("the latest publish of a version sets its channel and release notes", async () => {
      await publish(valid({ version: "6.0.0-beta.1", channel: "BETA", releaseNotes: "first" }));
      await publish(valid({ version: "6.0.0-beta.1", channel: "ALPHA", releaseNotes: "second" }));
      const row = await f.db
        .selectFrom("release_versions")
        .select(["channel", "release_notes"])
        .where("version", "=", "6.0.0-beta.1")
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ channel: "ALPHA", release_notes: "second" });
    });

    it('an empty fileSize or signature ("") is missing and stored as null', async () => {
      const response = await publish(
        valid({ version: "7.1.0", releases: [entry({ fileSize: "", signature: "" })] }),
      );
      expect(response.statusCode).toBe(200);
      const row = await f.db
        .selectFrom("release_artifacts")
        .innerJoin("release_versions", "release_versions.id", "release_artifacts.version_id")
        .select(["file_size", "signature"])
        .where("release_versions.version", "=", "7.1.0")
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ file_size: null, signature: null });
    });

    it("signature, fileSize and releaseNotes are optional", async () => {
      const response = await publish({
        productSlug: f.product.slug,
        version: "7.0.0",
        channel: "STABLE",
        releases: [
          { platform: "LINUX", arch: "ARM64", downloadUrl: "https://x.example.com/a.AppImage" },
        ],
      });
      expect(response.statusCode).toBe(200);
    });
  });

  describe("authentication", () => {
    it.each([
      ["a non-Bearer scheme", (key: string) => `Basic ${key}`],
      ["an empty token", () => "Bearer "],
      ["the bare key without a scheme", (key: string) => key],
      ["two tokens", (key: string) => `Bearer ${key} ${key}`],
    ])("%s is 401", async (_label, header) => {
      const response = await f.post("/api/releases/publish", valid(), {
        authorization: header(f.publishKey),
      });
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual({
        error: "Invalid or missing API key",
        code: "INVALID_API_KEY",
      });
    });

    it.each(["bearer", "BEARER", "BeArEr"])(
      "the scheme name %s is accepted (case-insensitive)",
      async (scheme) => {
        const response = await f.post("/api/releases/publish", valid({ version: "8.0.0" }), {
          authorization: `${scheme} ${f.publishKey}`,
        });
        expect(response.statusCode).toBe(200);
      },
    );

    it("a revoked key is 401", async () => {
      const created = await createApiKey(f.db, {
        name: "soon revoked",
        scopes: ["releases:write"],
      });
      expect((await publish(valid({ version: "9.0.0" }), created.key)).statusCode).toBe(200);
      await revokeApiKey(f.db, created.id);
      expect((await publish(valid({ version: "9.0.0" }), created.key)).statusCode).toBe(401);
    });

    it("an expired key is 401", async () => {
      const created = await createApiKey(f.db, {
        name: "old",
        scopes: ["releases:write"],
        expiresAt: Date.now() - 1,
      });
      expect((await publish(valid(), created.key)).statusCode).toBe(401);
    });

    it("authentication comes before the body is read: 401 even for malformed JSON or a wrong media type", async () => {
      const badJson = await f.app.inject({
        method: "POST",
        url: "/api/releases/publish",
        headers: { "content-type": "application/json" },
        payload: "{nope",
      });
      const textBody = await f.app.inject({
        method: "POST",
        url: "/api/releases/publish",
        headers: { "content-type": "text/plain" },
        payload: "hello",
      });
      expect(badJson.statusCode).toBe(401);
      expect(textBody.statusCode).toBe(401);
    });

    it("a 403 comes before any body validation", async () => {
      const response = await publish({}, f.readOnlyKey);
      expect(response.statusCode).toBe(403);
    });

    it("records last_used_at", async () => {
      const created = await createApiKey(f.db, { name: "tracked", scopes: ["releases:write"] });
      await publish(valid({ version: "10.0.0" }), created.key);
      const row = await f.db
        .selectFrom("api_keys")
        .select("last_used_at")
        .where("id", "=", created.id)
        .executeTakeFirstOrThrow();
      expect(row.last_used_at).toBeGreaterThan(Date.now() - 60_000);
    });

    it("stores only a SHA-256 hash and a display prefix, never the secret", async () => {
      const created = await createApiKey(f.db, { name: "hashed", scopes: ["releases:write"] });
      const row = await f.db
        .selectFrom("api_keys")
        .selectAll()
        .where("id", "=", created.id)
        .executeTakeFirstOrThrow();
      expect(JSON.stringify(row)).not.toContain(created.key);
      expect(row.key_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(created.key.startsWith(row.display_prefix)).toBe(true);
      expect(created.key).toMatch(/^shk_[A-Za-z0-9_-]{43}$/);
    });
  });

  describe("decisions: check order and input rules", () => {
    it.each([
      ["productSlug", { productSlug: undefined }, "productSlug"],
      ["version", { version: null }, "version"],
      ["channel", { channel: "" }, "channel"],
      ["releases", { releases: undefined }, "releases"],
      ["releases (empty array)", { releases: [] }, "releases"],
    ])("missing %s is 'Missing required fields'", async (_label, overrides, missing) => {
      const response = await publish(valid(overrides));
      expect(response.json()).toEqual({
        error: "Missing required fields",
        code: "MISSING_REQUIRED_FIELDS",
        fields: [missing],
      });
    });

    it.each([
      ["productSlug", 5, "productSlug must be a string"],
      ["version", 1.0, "version must be a string"],
      ["channel", ["STABLE"], "channel must be a string"],
      ["releases", { platform: "LINUX" }, "releases must be an array"],
      ["releaseNotes", 42, "releaseNotes must be a string"],
    ])("%s of the wrong JSON type is a 400 naming it", async (field, value, message) => {
      const response = await publish(valid({ [field]: value }));
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({ error: message, code: "INVALID_FIELD_TYPE", field });
    });

    it.each(["stable", "Stable", " STABLE"])(
      "channel %j is invalid (case-sensitive)",
      async (channel) => {
        expect((await publish(valid({ channel }))).json().error).toBe("Invalid channel");
      },
    );

    it.each([
      ["not an object (string)", "LINUX"],
      ["not an object (null)", null],
      ["not an object (array)", ["LINUX", "X64"]],
      ["missing downloadUrl", entry({ downloadUrl: undefined })],
      ["empty platform", entry({ platform: "" })],
      ["null arch", entry({ arch: null })],
    ])("an entry %s is 'Invalid release entry'", async (_label, bad) => {
      expect((await publish(valid({ releases: [entry(), bad] }))).json().error).toBe(
        "Invalid release entry",
      );
    });

    it.each([
      ["lowercase platform", entry({ platform: "linux" })],
      ["unknown arch", entry({ arch: "X86" })],
      ["non-string platform", entry({ platform: 1 })],
      ["non-string arch", entry({ arch: { x: 1 } })],
    ])("%s is 'Invalid platform/arch'", async (_label, bad) => {
      expect((await publish(valid({ releases: [bad] }))).json().error).toBe(
        "Invalid platform/arch",
      );
    });

    it.each([
      ["http", "http://x.example.com/a"],
      ["ftp", "ftp://x.example.com/a"],
      ["not a URL", "downloads/app.exe"],
      ["https without host", "https://"],
      ["with a space", "https://x.example.com/my app.exe"],
      ["leading whitespace", " https://x.example.com/a"],
      ["non-string", 123],
      ["javascript", "javascript:alert(1)"],
    ])("downloadUrl %s is 'Invalid download URL'", async (_label, downloadUrl) => {
      expect((await publish(valid({ releases: [entry({ downloadUrl })] }))).json().error).toBe(
        "Invalid download URL",
      );
    });

    it.each([
      "vv1.0.0",
      " 1.0.0",
      "1.0.0 ",
      "=1.0.0",
      "01.0.0",
      "1.0.0-",
      "1.0.0+",
      "1.0",
      "V1.0.0",
      "1.0.0-01",
      "latest",
    ])("version %j is 409 Invalid version format", async (version) => {
      const response = await publish(valid({ version }));
      expect(response.statusCode).toBe(409);
      expect(response.json().error).toBe("Invalid version format");
    });

    it.each([
      "1.0.0-alpha",
      "1.0.0-alpha.1",
      "1.0.0-0.3.7",
      "1.0.0-x.7.z.92",
      "1.0.0+20130313144700",
      "1.0.0-beta+exp.sha.5114f85",
      "v0.0.1",
    ])("version %j is valid semver 2.0.0", async (version) => {
      expect((await publish(valid({ version }))).statusCode).toBe(200);
    });

    it("each check is one pass over all entries: an incomplete second entry wins over a bad platform in the first", async () => {
      const response = await publish(
        valid({ releases: [entry({ platform: "BEOS" }), entry({ downloadUrl: null })] }),
      );
      expect(response.json().error).toBe("Invalid release entry");
    });

    it("platform/arch of all entries is checked before any URL", async () => {
      const response = await publish(
        valid({ releases: [entry({ downloadUrl: "http://x" }), entry({ arch: "MIPS" })] }),
      );
      expect(response.json().error).toBe("Invalid platform/arch");
    });

    it("channel is checked before entries, entries before version, version before product", async () => {
      expect((await publish(valid({ channel: "X", releases: ["bad"] }))).json().error).toBe(
        "Invalid channel",
      );
      expect((await publish(valid({ version: "x", releases: ["bad"] }))).json().error).toBe(
        "Invalid release entry",
      );
      expect((await publish(valid({ version: "x", productSlug: "none" }))).json().error).toBe(
        "Invalid version format",
      );
    });

    it("the same platform+arch twice in one request is a 400 and writes nothing", async () => {
      const response = await publish(valid({ version: "11.0.0", releases: [entry(), entry()] }));
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        error: "WINDOWS/X64 appears more than once",
        code: "DUPLICATE_RELEASE_ENTRY",
        field: "releases[1]",
      });
      const versions = await f.db
        .selectFrom("release_versions")
        .select("id")
        .where("version", "=", "11.0.0")
        .execute();
      expect(versions).toEqual([]);
    });

    it.each([
      [
        "more than 50 entries",
        () => ({ releases: Array.from({ length: 51 }, () => entry()) }),
        "TOO_MANY_RELEASES",
      ],
      [
        "downloadUrl over 2048 characters",
        () => ({ releases: [entry({ downloadUrl: `https://x.example.com/${"a".repeat(2048)}` })] }),
        "FIELD_TOO_LONG",
      ],
      [
        "signature over 8 KiB",
        () => ({ releases: [entry({ signature: "s".repeat(8193) })] }),
        "FIELD_TOO_LONG",
      ],
      [
        "signature not a string",
        () => ({ releases: [entry({ signature: 5 })] }),
        "INVALID_FIELD_TYPE",
      ],
      ["releaseNotes over 64 KiB", () => ({ releaseNotes: "n".repeat(65537) }), "FIELD_TOO_LONG"],
      ["negative fileSize", () => ({ releases: [entry({ fileSize: -1 })] }), "INVALID_FIELD_VALUE"],
      [
        "fractional fileSize",
        () => ({ releases: [entry({ fileSize: 1.5 })] }),
        "INVALID_FIELD_VALUE",
      ],
      [
        "fileSize beyond a safe integer",
        () => ({ releases: [entry({ fileSize: 2 ** 53 })] }),
        "INVALID_FIELD_VALUE",
      ],
      [
        "fileSize as a string",
        () => ({ releases: [entry({ fileSize: "100" })] }),
        "INVALID_FIELD_VALUE",
      ],
      [
        "version over 255 characters",
        () => ({ version: `1.0.0-${"a".repeat(250)}` }),
        "FIELD_TOO_LONG",
      ],
    ])("%s is a 400 and writes nothing", async (_label, overrides, code) => {
      const before = await f.db
        .selectFrom("release_artifacts")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .executeTakeFirstOrThrow();
      const response = await publish(valid({ version: "12.0.0", ...overrides() }));
      expect(response.statusCode).toBe(400);
      expect(response.json().code).toBe(code);
      const after = await f.db
        .selectFrom("release_artifacts")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .executeTakeFirstOrThrow();
      expect(Number(after.n)).toBe(Number(before.n));
    });

    it("limits come after the spec's checks: an oversized entry for an unknown product is 404", async () => {
      const response = await publish(
        valid({ productSlug: "ghost", releases: [entry({ signature: "s".repeat(9000) })] }),
      );
      expect(response.statusCode).toBe(404);
    });

    it("fileSize 0 and all six platform × arch pairs in one request are accepted", async () => {
      const releases = ["WINDOWS", "MACOS", "LINUX"].flatMap((platform) =>
        ["X64", "ARM64"].map((arch) => entry({ platform, arch, fileSize: 0 })),
      );
      const response = await publish(valid({ version: "13.0.0", releases }));
      expect(response.statusCode).toBe(200);
      expect(response.json().releases).toHaveLength(6);
    });
  });

  describe("atomicity", () => {
    it("a request either writes every entry or none: a failure on a later entry rolls back the earlier ones", async () => {
      // The schema's CHECK constraint rejects the second entry inside the transaction, after the
      // version row and the first entry were written.
      const write = publishRelease(f.db, testActor, f.product, {
        version: "14.0.0",
        channel: "STABLE",
        releaseNotes: null,
        entries: [
          {
            platform: "LINUX",
            arch: "X64",
            downloadUrl: "https://x.example.com/a",
            signature: null,
            fileSize: null,
          },
          {
            platform: "BOGUS" as Platform,
            arch: "X64",
            downloadUrl: "https://x.example.com/b",
            signature: null,
            fileSize: null,
          },
        ],
      });
      await expect(write).rejects.toThrow();
      const versions = await f.db
        .selectFrom("release_versions")
        .select("id")
        .where("version", "=", "14.0.0")
        .execute();
      expect(versions).toEqual([]);
      const artifacts = await f.db
        .selectFrom("release_artifacts")
        .select("id")
        .where("download_url", "=", "https://x.example.com/a")
        .execute();
      expect(artifacts).toEqual([]);
    });
  });
});
