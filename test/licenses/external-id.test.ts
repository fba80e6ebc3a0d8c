import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

describe.each(dialects)("license externalId (%s)", (dialect) => {
  let f: Fixture;
  let apiKey: string;
  let cookie: string;
  let csrf: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ apiKey, cookie, csrf } = await adminAccess(f, "ext@example.com"));
  });
  afterAll(async () => {
    await f.close();
  });

  const call = (method: "GET" | "POST" | "PATCH", url: string, body?: unknown) =>
    callWithApiKey(f, apiKey, method, url, body);
  const create = (body: Record<string, unknown>) =>
    call("POST", "/api/admin/licenses", { productSlug: "desktop-app", maxMachines: 1, ...body });

  it("is set on creation, null by default, and shown by GET", async () => {
    const created = await create({ externalId: "order-1" });
    expect(created.statusCode).toBe(201);
    expect(created.json().externalId).toBe("order-1");
    const shown = await call("GET", `/api/admin/licenses/${created.json().licenseKey}`);
    expect(shown.json().externalId).toBe("order-1");
    expect((await create({})).json().externalId).toBeNull();
    expect((await create({ externalId: "" })).json().externalId).toBeNull();
  });

  it("is unique per product; other products and null values do not collide", async () => {
    expect((await create({ externalId: "order-2" })).statusCode).toBe(201);
    const again = await create({ externalId: "order-2" });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({
      error: "externalId is already used by another license of this product",
      code: "EXTERNAL_ID_TAKEN",
      field: "externalId",
    });
    const other = await create({ productSlug: "other-app", externalId: "order-2" });
    expect(other.statusCode).toBe(201);
    expect((await create({ externalId: null })).statusCode).toBe(201);
    expect((await create({ externalId: null })).statusCode).toBe(201);
  });

  it("concurrent creations with one externalId make one license, never a 500", async () => {
    const responses = await Promise.all(
      Array.from({ length: 8 }, () => create({ externalId: "order-race" })),
    );
    expect(responses.map((r) => r.statusCode).sort()).toEqual([
      201, 409, 409, 409, 409, 409, 409, 409,
    ]);
  });

  it("is changed and cleared by PATCH; taking another license's id is a 409", async () => {
    const key: string = (await create({ externalId: "order-3" })).json().licenseKey;
    await create({ externalId: "order-4" });
    const changed = await call("PATCH", `/api/admin/licenses/${key}`, { externalId: "order-5" });
    expect(changed.json().externalId).toBe("order-5");
    const taken = await call("PATCH", `/api/admin/licenses/${key}`, { externalId: "order-4" });
    expect(taken.statusCode).toBe(409);
    expect(taken.json().code).toBe("EXTERNAL_ID_TAKEN");
    const cleared = await call("PATCH", `/api/admin/licenses/${key}`, { externalId: null });
    expect(cleared.json().externalId).toBeNull();
  });

  it.each([
    [{ externalId: "x".repeat(256) }, "body/externalId must NOT have more than 255 characters"],
    [{ externalId: "line\nbreak" }, "externalId must not contain control characters"],
    [{ externalId: 42 }, "body/externalId must be string,null"],
  ])("%j is a 400", async (body, message) => {
    const response = await create(body);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toBe(message);
  });

  it("filters the list exactly, and the search matches it", async () => {
    const key: string = (await create({ externalId: "shop-7781" })).json().licenseKey;
    await create({ externalId: "shop-77810" });
    const exact = await call("GET", "/api/admin/licenses?externalId=shop-7781");
    expect(exact.json().items.map((l: { licenseKey: string }) => l.licenseKey)).toEqual([key]);
    const search = await call("GET", "/api/admin/licenses?q=SHOP-778");
    expect(search.json().items).toHaveLength(2);
  });

  it("the dashboard sets it, lists it, shows it and finds it", async () => {
    const form = (url: string, fields: Record<string, string>) =>
      f.app.inject({
        method: "POST",
        url,
        headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString(),
      });
    const created = await form("/admin/licenses", {
      productSlug: "desktop-app",
      maxMachines: "1",
      externalId: "dash-order-9",
    });
    expect(created.statusCode).toBe(303);
    const detailUrl = String(created.headers.location).split("?")[0] ?? "";
    const page = (url: string) => f.app.inject({ method: "GET", url, headers: { cookie } });
    expect((await page(detailUrl)).body).toContain("dash-order-9");
    const list = await page("/admin/licenses?q=dash-order");
    expect(list.body).toContain("dash-order-9");
    expect(list.body).toContain(detailUrl);
    const edited = await form(`${detailUrl}/edit`, { maxMachines: "1", externalId: "dash-10" });
    expect(edited.statusCode).toBe(303);
    expect((await page(detailUrl)).body).toContain("dash-10");
  });
});
