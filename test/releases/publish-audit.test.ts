import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import { adminAccess } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

/**
 * Each successful publish writes one release.publish audit entry in its transaction: who (the
 * API key's id and name, never its secret), which product, version and channel, and which
 * entries it created or replaced. A refused publish writes none. The releases page says who
 * published each version. Both databases.
 */
describe.each(dialects)("publish is audited (%s)", (dialect) => {
  let f: Fixture;
  let cookie: string;
  let key: { id: string; key: string };
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ cookie } = await adminAccess(f, "publish-audit@example.com"));
    key = await createApiKey(f.db, { name: "GitHub Actions desktop", scopes: ["releases:write"] });
  });
  afterAll(async () => {
    await f.close();
  });

  const publish = (version: string, platforms: string[], channel = "STABLE") =>
    f.post(
      "/api/releases/publish",
      {
        productSlug: f.product.slug,
        version,
        channel,
        releases: platforms.map((platform) => ({
          platform,
          arch: "X64",
          downloadUrl: `https://cdn.example.com/${version}/${platform}.zip`,
        })),
      },
      { authorization: `Bearer ${key.key}` },
    );

  const publishEntries = () =>
    f.db
      .selectFrom("audit_log")
      .selectAll()
      .where("action", "=", "release.publish")
      .orderBy("at")
      .orderBy("id")
      .execute();

  it("records who, which product, version and channel, and the entries created", async () => {
    const response = await publish("v1.4.0", ["WINDOWS", "LINUX"]);
    expect(response.statusCode).toBe(200);
    const entries = await publishEntries();
    expect(entries).toHaveLength(1);
    const [entry] = entries;
    expect(entry).toMatchObject({
      actor_type: "api_key",
      actor_id: key.id,
      actor_label: "GitHub Actions desktop",
      target_type: "release",
      target_id: `${f.product.slug}@1.4.0`,
    });
    expect(JSON.parse(entry?.details ?? "{}")).toEqual({
      product: f.product.slug,
      version: "1.4.0",
      channel: "STABLE",
      created: ["WINDOWS/X64", "LINUX/X64"],
      replaced: [],
    });
    expect(JSON.stringify(entries)).not.toContain(key.key);
  });

  it("a publish again records the entries it replaced and the new channel", async () => {
    expect((await publish("1.4.0", ["LINUX", "MACOS"], "BETA")).statusCode).toBe(200);
    const entries = await publishEntries();
    expect(entries).toHaveLength(2);
    expect(JSON.parse(entries[1]?.details ?? "{}")).toEqual({
      product: f.product.slug,
      version: "1.4.0",
      channel: "BETA",
      created: ["MACOS/X64"],
      replaced: ["LINUX/X64"],
    });
  });

  it("a refused publish records nothing", async () => {
    const before = (await publishEntries()).length;
    const duplicate = await publish("1.5.0", ["WINDOWS", "WINDOWS"]);
    expect(duplicate.statusCode).toBe(400);
    const unknown = await f.post(
      "/api/releases/publish",
      {
        productSlug: "no-such-app",
        version: "1.5.0",
        channel: "STABLE",
        releases: [{ platform: "WINDOWS", arch: "X64", downloadUrl: "https://cdn.example.com/a" }],
      },
      { authorization: `Bearer ${key.key}` },
    );
    expect(unknown.statusCode).toBe(404);
    expect(await publishEntries()).toHaveLength(before);
    expect(
      await f.db
        .selectFrom("release_versions")
        .select("id")
        .where("version", "=", "1.5.0")
        .execute(),
    ).toEqual([]);
  });

  it("an admin with audit:read sees it in the audit log", async () => {
    const response = await f.app.inject({ url: "/api/admin/audit", headers: { cookie } });
    const [latest] = response.json<{ items: Array<Record<string, unknown>> }>().items;
    expect(latest).toMatchObject({
      action: "release.publish",
      actor: { type: "api_key", id: key.id, label: "GitHub Actions desktop" },
      target: { type: "release", id: `${f.product.slug}@1.4.0` },
    });
  });

  it("the releases page says who published each version, from its latest publish", async () => {
    const other = await createApiKey(f.db, { name: "release bot", scopes: ["releases:write"] });
    const byOther = await f.post(
      "/api/releases/publish",
      {
        productSlug: f.product.slug,
        version: "2.0.0",
        channel: "STABLE",
        releases: [{ platform: "WINDOWS", arch: "X64", downloadUrl: "https://cdn.example.com/b" }],
      },
      { authorization: `Bearer ${other.key}` },
    );
    expect(byOther.statusCode).toBe(200);
    const page = await f.app.inject({
      url: `/admin/releases?product=${f.product.slug}`,
      headers: { cookie },
    });
    expect(page.statusCode).toBe(200);
    const panel = (version: string) =>
      page.body.split(`data-version="${version}"`)[1]?.split("</section>")[0] ?? "";
    expect(panel("2.0.0")).toContain("Published by API key “release bot”");
    expect(panel("1.4.0")).toContain("Published by API key “GitHub Actions desktop”");
  });
});
