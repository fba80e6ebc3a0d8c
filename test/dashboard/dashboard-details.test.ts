import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminAccess } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

describe.each(dialects)("dashboard details (%s)", (dialect) => {
  let f: Fixture;
  let cookie: string;
  const get = (url: string) => f.app.inject({ method: "GET", url, headers: { cookie } });
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ cookie } = await adminAccess(f, "details@example.com"));
  });
  afterAll(async () => {
    await f?.close();
  });

  it("has a favicon of its own", async () => {
    expect((await get("/admin/licenses")).body).toContain(
      '<link rel="icon" href="/admin/assets/favicon.svg" type="image/svg+xml" />',
    );
    const icon = await f.app.inject({ method: "GET", url: "/admin/assets/favicon.svg" });
    expect(icon.statusCode).toBe(200);
    expect(icon.headers["content-type"]).toContain("image/svg+xml");
  });

  it("gives the slug a pattern browsers compile (with the v flag, as Chrome does)", async () => {
    const page = (await get("/admin/products")).body;
    const pattern = /pattern="([^"]+)"/.exec(page)?.[1];
    expect(pattern).toBeDefined();
    const compiled = new RegExp(`^(?:${pattern ?? ""})$`, "v");
    expect(compiled.test("desktop-app")).toBe(true);
    expect(compiled.test("-app")).toBe(false);
  });

  it("shows a license's key with a copy button and its note with its line breaks", async () => {
    const key = await f.createLicense({ note: "first line\nsecond line" });
    const page = (await get(`/admin/licenses/${key}`)).body;
    expect(page).toContain(`<span class="mono" id="license-key">${key}</span>`);
    expect(page).toContain('data-copy="license-key"');
    expect(page).toContain('<dd class="note">first line\nsecond line</dd>');
  });
});
