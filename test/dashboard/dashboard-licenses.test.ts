import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLicense } from "../../src/domain/licenses/manage-licenses.js";
import { csvCell } from "../../src/domain/licenses/licenses-csv.js";
import { adminAccess } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

const day = 86_400_000;
const start = Date.UTC(2026, 0, 1);

/** The license keys a list page shows, in order. */
const keysOn = (page: string) =>
  [...page.matchAll(/<a class="mono" href="\/admin\/licenses\/([^"]+)"/g)].map((m) => m[1]);

describe.each(dialects)("dashboard licenses list (%s)", (dialect) => {
  let f: Fixture;
  let cookie: string;
  const get = (url: string) => f.app.inject({ method: "GET", url, headers: { cookie } });

  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ cookie } = await adminAccess(f, "lists@example.com"));
    const slug = f.product.slug;
    // 60 licenses, one a day; customers in reverse order of creation.
    for (let i = 0; i < 60; i++) {
      const n = String(i).padStart(2, "0");
      await createLicense(
        f.db,
        {
          productSlug: slug,
          licenseKey: `LIST-KEY-${n}-ABCDEFGH`,
          maxMachines: i === 7 ? 1 : 3,
          customerName: `Customer ${String(59 - i).padStart(2, "0")}`,
          note: i === 12 ? "Paid by\nwire transfer" : null,
          externalId: i === 13 ? `order-${n}` : null,
          expiresAt: i === 20 ? Date.now() + 10 * day : i === 21 ? Date.now() + 90 * day : null,
        },
        start + i * day,
      );
    }
    const activate = (key: string, machineId: string) =>
      f.post("/api/license/activate", { licenseKey: key, machineId, productSlug: slug });
    expect((await activate("LIST-KEY-07-ABCDEFGH", "machine-full")).statusCode).toBe(200);
    expect((await activate("LIST-KEY-08-ABCDEFGH", "machine-eight")).statusCode).toBe(200);
  });
  afterAll(async () => {
    await f?.close();
  });

  it("shows the total, a created column and pages first / previous / next", async () => {
    const first = (await get("/admin/licenses")).body;
    expect(first).toContain("<strong>60</strong> licenses");
    expect(first).toContain("Created");
    expect(keysOn(first)).toHaveLength(50);
    expect(keysOn(first)[0]).toBe("LIST-KEY-59-ABCDEFGH");
    expect(first).toContain('href="/admin/licenses?page=2" rel="next"');
    expect(first).not.toContain('rel="prev"');
    const second = (await get("/admin/licenses?page=2")).body;
    expect(keysOn(second)).toHaveLength(10);
    expect(keysOn(second)[9]).toBe("LIST-KEY-00-ABCDEFGH");
    expect(second).toContain('rel="first"');
    expect(second).toContain('href="/admin/licenses" rel="prev"');
    expect(second).not.toContain('rel="next"');
    expect((await get("/admin/licenses?page=nonsense")).statusCode).toBe(200);
  });

  it("sorts by created, customer, machines and expiry, both ways", async () => {
    const keys = async (query: string) => keysOn((await get(`/admin/licenses?${query}`)).body);
    expect((await keys("sort=created&dir=asc"))[0]).toBe("LIST-KEY-00-ABCDEFGH");
    expect((await keys("sort=customer&dir=asc"))[0]).toBe("LIST-KEY-59-ABCDEFGH");
    expect((await keys("sort=customer&dir=desc"))[0]).toBe("LIST-KEY-00-ABCDEFGH");
    expect((await keys("sort=machines&dir=desc")).slice(0, 2).sort()).toEqual([
      "LIST-KEY-07-ABCDEFGH",
      "LIST-KEY-08-ABCDEFGH",
    ]);
    const byExpiry = await keys("sort=expires&dir=asc&expired=no&q=LIST-KEY-2");
    expect(byExpiry.indexOf("LIST-KEY-20-ABCDEFGH")).toBeLessThan(
      byExpiry.indexOf("LIST-KEY-21-ABCDEFGH"),
    );
    // The sorted heading links the other way, and keeps the filters.
    const page = (await get("/admin/licenses?sort=customer&dir=asc&q=list")).body;
    expect(page).toContain('href="/admin/licenses?q=list&amp;sort=customer" data-sort="customer"');
  });

  it("tells the total on a full page, the last page and a page past the end", async () => {
    const total = (page: string) => /<strong>(\d+)<\/strong> licenses?/.exec(page)?.[1];
    expect(total((await get("/admin/licenses?page=2")).body)).toBe("60");
    expect(total((await get("/admin/licenses?page=5")).body)).toBe("60");
    expect(total((await get(`/admin/licenses?product=${f.product.slug}`)).body)).toBe("60");
    expect((await get("/admin/licenses?product=no-such-product")).body).not.toContain("LIST-KEY");
  });

  it("sorts a status's few licenses as it sorts them all", async () => {
    const suspended = ["LIST-KEY-30-ABCDEFGH", "LIST-KEY-31-ABCDEFGH", "LIST-KEY-32-ABCDEFGH"];
    await f.db
      .updateTable("licenses")
      .set({ status: "SUSPENDED" })
      .where("license_key", "in", suspended)
      .execute();
    const keys = async (query: string) => keysOn((await get(`/admin/licenses?${query}`)).body);
    const newestFirst = [...suspended].reverse();
    expect(await keys("status=SUSPENDED")).toEqual(newestFirst);
    expect(await keys("status=SUSPENDED&sort=created&dir=asc")).toEqual(suspended);
    expect(await keys("status=SUSPENDED&sort=customer&dir=asc")).toEqual(newestFirst);
    // No expiry: the id decides, in an order of its own.
    const byExpiry = await keys(`status=SUSPENDED&product=${f.product.slug}&sort=expires`);
    expect(byExpiry.sort()).toEqual(suspended);
    const pastTheEnd = (await get("/admin/licenses?status=SUSPENDED&page=2")).body;
    expect(pastTheEnd).toContain("<strong>3</strong> licenses");
    await f.db
      .updateTable("licenses")
      .set({ status: "ACTIVE" })
      .where("license_key", "in", suspended)
      .execute();
  });

  it("searches notes and external ids, and filters at limit, expiring soon and by machine", async () => {
    const keys = async (query: string) => keysOn((await get(`/admin/licenses?${query}`)).body);
    expect(await keys("q=WIRE")).toEqual(["LIST-KEY-12-ABCDEFGH"]);
    expect(await keys("q=order-1")).toEqual(["LIST-KEY-13-ABCDEFGH"]);
    expect(await keys("only=at-limit")).toEqual(["LIST-KEY-07-ABCDEFGH"]);
    expect(await keys("only=expiring")).toEqual(["LIST-KEY-20-ABCDEFGH"]);
    expect(await keys("machine=machine-eight")).toEqual(["LIST-KEY-08-ABCDEFGH"]);
    expect(await keys("machine=nobody")).toEqual([]);
  });

  it("exports the current filter as CSV", async () => {
    const all = await get("/admin/licenses/export.csv");
    expect(all.statusCode).toBe(200);
    expect(all.headers["content-type"]).toContain("text/csv");
    expect(all.headers["content-disposition"]).toMatch(/attachment; filename="licenses-/);
    const lines = all.body.trimEnd().split("\r\n");
    expect(lines[0]).toMatch(/^licenseKey,product,status,activeMachines,maxMachines/);
    // Records end in CRLF; the note's bare line break stays quoted inside its cell.
    expect(lines).toHaveLength(61);
    const filtered = await get("/admin/licenses/export.csv?q=wire");
    expect(filtered.body).toContain('"Paid by\nwire transfer"');
    expect(filtered.body.trimEnd().split("\r\n")).toHaveLength(2);
    expect((await get("/admin/licenses")).body).toContain('href="/admin/licenses/export.csv"');
  });

  it("writes cells a spreadsheet cannot run", () => {
    expect(csvCell("=HYPERLINK(1)")).toBe("'=HYPERLINK(1)");
    expect(csvCell('say "hi", ok')).toBe('"say ""hi"", ok"');
    expect(csvCell(null)).toBe("");
    expect(csvCell(-3)).toBe("-3");
  });

  it("asks for a session", async () => {
    const response = await f.app.inject({ method: "GET", url: "/admin/licenses/export.csv" });
    expect(response.statusCode).toBeGreaterThanOrEqual(300);
    expect(response.body).not.toContain("LIST-KEY");
  });
});
