import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

describe.each(dialects)("audit log filters (%s)", (dialect) => {
  let f: Fixture;
  let apiKey: string;
  let cookie: string;
  let before: string;
  const api = async (query: string) => {
    const response = await callWithApiKey(f, apiKey, "GET", `/api/admin/audit?${query}`);
    return { status: response.statusCode, body: response.json() };
  };
  const actions = async (query: string) =>
    ((await api(query)).body.items as Array<{ action: string }>).map((e) => e.action);

  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ apiKey, cookie } = await adminAccess(f, "auditor@example.com"));
    before = new Date(Date.now() - 1000).toISOString();
    const slug = f.product.slug;
    const create = (licenseKey: string) =>
      callWithApiKey(f, apiKey, "POST", "/api/admin/licenses", {
        productSlug: slug,
        licenseKey,
        maxMachines: 1,
      });
    expect((await create("AUDIT-FILTER-KEY-0001")).statusCode).toBe(201);
    expect((await create("AUDIT-FILTER-KEY-0002")).statusCode).toBe(201);
    const update = await callWithApiKey(
      f,
      apiKey,
      "PATCH",
      "/api/admin/licenses/AUDIT-FILTER-KEY-0001",
      { note: "line one\nline two" },
    );
    expect(update.statusCode).toBe(200);
  });
  afterAll(async () => {
    await f?.close();
  });

  it("filters the admin API by action, family, target, actor and time", async () => {
    expect(await actions("action=license.update")).toEqual(["license.update"]);
    expect(await actions("action=license")).toEqual([
      "license.update",
      "license.create",
      "license.create",
    ]);
    expect(await actions("target=AUDIT-FILTER-KEY-0001")).toEqual([
      "license.update",
      "license.create",
    ]);
    expect(await actions("actor=all&action=license")).toHaveLength(3);
    expect(await actions("actor=someone-else")).toEqual([]);
    expect(await actions(`from=${encodeURIComponent(before)}&action=license`)).toHaveLength(3);
    expect(await actions(`to=${encodeURIComponent(before)}&action=license`)).toEqual([]);
    const paged = await api("action=license&limit=2");
    expect(paged.body.items).toHaveLength(2);
    const rest = await api(`action=license&limit=2&cursor=${paged.body.nextCursor}`);
    expect(rest.body.items.map((e: { action: string }) => e.action)).toEqual(["license.create"]);
  });

  it("refuses a bad time with a 400", async () => {
    const response = await api("from=yesterday");
    expect(response.status).toBe(400);
    expect(response.body.code).toBeTypeOf("string");
  });

  it("filters the dashboard's log and wraps its details", async () => {
    const get = (query: string) =>
      f.app.inject({ method: "GET", url: `/admin/audit?${query}`, headers: { cookie } });
    const page = (await get("target=AUDIT-FILTER-KEY-0002")).body;
    expect(page.match(/<td class="mono">license\.create<\/td>/g)).toHaveLength(1);
    expect(page).not.toContain(">license.update</td>");
    expect(page).toContain('value="AUDIT-FILTER-KEY-0002"');
    const today = new Date().toISOString().slice(0, 10);
    const dated = (await get(`from=${today}&to=${today}&action=license.update`)).body;
    expect(dated).toContain('<td class="mono details">');
    expect((await get("from=2000-01-01&to=2000-01-01")).body).toContain("No entries match");
    const refused = await get("from=soon");
    expect(refused.statusCode).toBe(200);
    expect(refused.body).toContain("from must be a date");
  });
});
