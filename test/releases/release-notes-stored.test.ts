import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { markdownToHtml } from "../../src/domain/releases/release-notes-markdown.js";
import { plainTextHtml, renderReleaseNotes } from "../../src/domain/releases/release-notes.js";
import { limits } from "../../src/contracts/vocabulary.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

describe("the bounded renderer", () => {
  it("renders Markdown on its thread as the dashboard's renderer does", async () => {
    const notes = "## Fixes\n\n- **faster** start, [details](https://example.com/1)";
    expect(await renderReleaseNotes(notes)).toBe(markdownToHtml(notes));
    expect(await renderReleaseNotes(null)).toBeNull();
  });

  it("past its deadline stores escaped text, and the next render works again", async () => {
    const worst = "![".repeat(limits.releaseNotes / 2);
    expect(await renderReleaseNotes(worst, 1)).toBe(plainTextHtml(worst));
    const hostile = "<script>alert(1)</script>\n\n& more";
    expect(await renderReleaseNotes(hostile, 0)).toBe(
      "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n<p>&amp; more</p>\n",
    );
    expect(await renderReleaseNotes("**ok**")).toBe("<p><strong>ok</strong></p>\n");
  });

  it("renders concurrent notes each to its own HTML", async () => {
    const notes = Array.from({ length: 20 }, (_, i) => `**${i}**`);
    const html = await Promise.all(notes.map((n) => renderReleaseNotes(n)));
    expect(html).toEqual(notes.map((n) => markdownToHtml(n)));
  });
});

describe.each(dialects)("release notes are rendered when published (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => {
    await f.close();
  });

  const publish = (version: string, releaseNotes: string) =>
    f.post(
      "/api/releases/publish",
      {
        productSlug: f.product.slug,
        version,
        channel: "STABLE",
        releaseNotes,
        releases: [
          {
            platform: "MACOS",
            arch: "ARM64",
            downloadUrl: `https://dl.example.com/${version}.zip`,
          },
        ],
      },
      { authorization: `Bearer ${f.publishKey}` },
    );
  const appcast = () =>
    f.app.inject({ url: `/api/updates/${f.product.slug}/sparkle/macos/arm64/appcast.xml` });

  it("the appcast serves the HTML stored at publish, whatever the Markdown column says later", async () => {
    expect((await publish("1.0.0", "## One\n\n- **bold** fix")).statusCode).toBe(200);
    const row = await f.db
      .selectFrom("release_versions")
      .select(["id", "release_notes_html"])
      .where("version", "=", "1.0.0")
      .executeTakeFirstOrThrow();
    expect(row.release_notes_html).toBe(
      "<h2>One</h2>\n<ul>\n<li><strong>bold</strong> fix</li>\n</ul>\n",
    );
    const before = await appcast();
    expect(before.body).toContain("&lt;strong&gt;bold&lt;/strong&gt;");
    // No request renders: Markdown changed by hand is not seen until the next publish renders it.
    await f.db
      .updateTable("release_versions")
      .set({ release_notes: "**changed by hand**" })
      .where("id", "=", row.id)
      .execute();
    expect((await appcast()).body).toBe(before.body);
    expect((await publish("1.0.0", "**published again**")).statusCode).toBe(200);
    expect((await appcast()).body).toContain("&lt;strong&gt;published again&lt;/strong&gt;");
  });

  it("the worst allowed notes are stored once and served like any other", async () => {
    const worst = "![".repeat(limits.releaseNotes / 2);
    expect((await publish("2.0.0", worst)).statusCode).toBe(200);
    const { release_notes_html: html } = await f.db
      .selectFrom("release_versions")
      .select("release_notes_html")
      .where("version", "=", "2.0.0")
      .executeTakeFirstOrThrow();
    expect(html === markdownToHtml(worst) || html === plainTextHtml(worst)).toBe(true);
    const answer = await appcast();
    expect(answer.statusCode).toBe(200);
    expect(answer.body).toContain("<title>2.0.0</title>");
  });
});
