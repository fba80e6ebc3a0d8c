import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminAccess } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

const versionsOn = (page: string) =>
  [...page.matchAll(/<section class="panel release" data-version="([^"]+)"/g)].map((m) => m[1]);

describe.each(dialects)("dashboard releases pages (%s)", (dialect) => {
  let f: Fixture;
  let cookie: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ cookie } = await adminAccess(f, "pages@example.com"));
    for (let minor = 0; minor < 23; minor++) {
      const version = `1.${minor}.0`;
      const response = await f.post(
        "/api/releases/publish",
        {
          productSlug: f.product.slug,
          version,
          channel: "STABLE",
          releases: [
            {
              platform: "LINUX",
              arch: "X64",
              downloadUrl: `https://cdn.example.com/${version}/app.AppImage`,
              signature: `sig-${version}`,
              sha512: createHash("sha512").update(version).digest("base64"),
            },
          ],
        },
        { authorization: `Bearer ${f.publishKey}` },
      );
      expect(response.statusCode, response.body).toBe(200);
    }
  });
  afterAll(async () => {
    await f?.close();
  });

  it("shows 20 versions a page, newest first, with links between pages", async () => {
    const get = async (query: string) =>
      (await f.app.inject({ method: "GET", url: `/admin/releases?${query}`, headers: { cookie } }))
        .body;
    const slug = f.product.slug;
    const first = await get(`product=${slug}`);
    expect(versionsOn(first)).toHaveLength(20);
    expect(versionsOn(first)[0]).toBe("1.22.0");
    expect(first).toContain(`href="/admin/releases?product=${slug}&amp;page=2" rel="next"`);
    const second = await get(`product=${slug}&page=2`);
    expect(versionsOn(second)).toEqual(["1.2.0", "1.1.0", "1.0.0"]);
    expect(second).toContain(`href="/admin/releases?product=${slug}" rel="prev"`);
    expect(second).not.toContain('rel="next"');
  });
});
