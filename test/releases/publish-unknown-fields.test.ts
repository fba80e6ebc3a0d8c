import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

// A publish refuses a field its contract does not define, in the body or in an entry, naming it
// and the known field it is close to: a hand-written `notes` would otherwise publish a version
// without notes, a `sha256` one that electron-updater is never offered. The spec's checks come
// first, so a request failing one still gets the spec's answer.
const entry = (overrides: Record<string, unknown> = {}) => ({
  platform: "WINDOWS",
  arch: "X64",
  downloadUrl: "https://downloads.example.com/app-9.0.0-win-x64.exe",
  ...overrides,
});

describe.each(dialects)("publish refuses unknown fields (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => {
    await f.close();
  });

  const publish = (body: unknown, key: string | null = f.publishKey) =>
    f.post("/api/releases/publish", body, key === null ? {} : { authorization: `Bearer ${key}` });
  const body = (overrides: Record<string, unknown> = {}) => ({
    productSlug: f.product.slug,
    version: "9.0.0",
    channel: "STABLE",
    releases: [entry()],
    ...overrides,
  });
  const versionStored = async (version: string) =>
    (await f.db
      .selectFrom("release_versions")
      .select("id")
      .where("version", "=", version)
      .executeTakeFirst()) !== undefined;

  it.each([
    ["notes", { notes: "## Fixed" }, "notes", "releaseNotes"],
    ["sha256", { releases: [entry({ sha256: "abc" })] }, "releases[0].sha256", "sha512"],
    ["size", { releases: [entry({ size: 1024 })] }, "releases[0].size", "fileSize"],
    [
      "url",
      { releases: [entry({ url: "https://x.example/a" })] },
      "releases[0].url",
      "downloadUrl",
    ],
    ["a case slip", { ReleaseNotes: "x" }, "ReleaseNotes", "releaseNotes"],
    ["a typo", { chanel: "STABLE" }, "chanel", "channel"],
    [
      "an entry after the first",
      { releases: [entry(), entry({ arch: "ARM64", signatur: "s" })] },
      "releases[1].signatur",
      "signature",
    ],
  ])(
    "%s is a 400 naming the field and the one meant; nothing is written",
    async (_c, o, field, meant) => {
      const response = await publish(body(o));
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        error: `Unknown field ${field}: did you mean ${meant}?`,
        code: "UNKNOWN_FIELD",
        field,
      });
      expect(await versionStored("9.0.0")).toBe(false);
    },
  );

  it("a field close to no known field is named without a suggestion", async () => {
    const response = await publish(body({ releases: [entry({ checksum: "abc" })] }));
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({
      error: "Unknown field releases[0].checksum",
      code: "UNKNOWN_FIELD",
      field: "releases[0].checksum",
    });
  });

  it("the body's fields are checked before the entries', each in order", async () => {
    const response = await publish(
      body({ colour: "red", notes: "x", releases: [entry({ size: 1 })] }),
    );
    expect(response.json()).toMatchObject({ code: "UNKNOWN_FIELD", field: "colour" });
  });

  it("comes before the optional fields' types and the documented limits", async () => {
    const response = await publish(
      body({ notes: "x", critical: "yes", releases: [entry(), entry()] }),
    );
    expect(response.json()).toMatchObject({ code: "UNKNOWN_FIELD", field: "notes" });
  });

  it.each([
    [
      "401: no key",
      () => ({ body: body({ notes: "x" }), key: null }),
      401,
      "Invalid or missing API key",
    ],
    [
      "400: a required field missing",
      () => ({ body: body({ notes: "x", version: undefined }) }),
      400,
      "Missing required fields",
    ],
    [
      "400: an entry with url in place of downloadUrl",
      () => ({
        body: body({
          releases: [{ platform: "WINDOWS", arch: "X64", url: "https://x.example/a" }],
        }),
      }),
      400,
      "Invalid release entry",
    ],
    [
      "400: a bad channel",
      () => ({ body: body({ channel: "NIGHTLY", notes: "x" }) }),
      400,
      "Invalid channel",
    ],
    [
      "409: a bad version",
      () => ({ body: body({ version: "1.0", notes: "x" }) }),
      409,
      "Invalid version format",
    ],
    [
      "404: an unknown product",
      () => ({ body: body({ productSlug: "no-such-product", notes: "x" }) }),
      404,
      "Product not found",
    ],
  ])(
    "a publish that also fails a spec check gets the spec's answer (%s)",
    async (_c, request, status, error) => {
      const { body: sent, key } = request() as { body: unknown; key?: null };
      const response = await publish(sent, key === null ? null : f.publishKey);
      expect(response.statusCode).toBe(status);
      expect(response.json().error).toBe(error);
    },
  );

  it("every field the contract defines is accepted", async () => {
    const response = await publish(
      body({
        version: "9.1.0",
        releaseNotes: "notes",
        rollout: { percent: 50 },
        critical: false,
        releases: [
          entry({ signature: "c2lnbmF0dXJl", fileSize: 1024, sha512: "A".repeat(86) + "==" }),
        ],
      }),
    );
    expect(response.statusCode).toBe(200);
    expect(await versionStored("9.1.0")).toBe(true);
  });
});
