import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditEntry } from "../../src/contracts/audit.js";
import type { LicenseDetail } from "../../src/contracts/licenses.js";
import { commands } from "../../src/cli/commands.js";
import { activateMachine } from "../../src/actions/machines.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { commandContext } from "../helpers/cli.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

const start = Date.UTC(2026, 0, 1);
/** Lets the clock move on, so entries made one after another have distinct times. */
const tick = () => new Promise((resolve) => setTimeout(resolve, 3));

/** The machine ids a license page shows, in order. */
const machinesOn = (page: string) =>
  [...page.matchAll(/<tr data-machine="([^"]+)"/g)].map((m) => m[1]);

/** The actions a History tab shows, in order. */
const actionsOn = (page: string) =>
  [...page.matchAll(/<tr data-action="([^"]+)"/g)].map((m) => m[1]);

describe.each(dialects)(
  "a license's history and its machines, a page at a time (%s)",
  (dialect) => {
    let f: Fixture;
    let apiKey: string;
    let cookie: string;
    let csrf: string;
    const licenseKey = "HISTORY-LICENSE-0001-WXYZ";
    const manyKey = "MANY-MACHINES-0001-ABCD";
    const url = `/admin/licenses/${licenseKey}`;
    const get = (path: string) => f.app.inject({ method: "GET", url: path, headers: { cookie } });
    const call = (method: "GET" | "POST" | "PATCH", path: string, body?: unknown) =>
      callWithApiKey(f, apiKey, method, path, body);
    const form = async (path: string, fields: Record<string, string>) => {
      const response = await f.app.inject({
        method: "POST",
        url: path,
        headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString(),
      });
      expect(response.statusCode).toBe(303);
    };
    const activate = (key: string, machineId: string, at: number) =>
      activateMachine(
        f.db,
        {
          licenseKey: key,
          machineId,
          productSlug: f.product.slug,
          machineName: null,
          platform: null,
        },
        at,
      );

    beforeAll(async () => {
      f = await createFixture(dialect);
      ({ apiKey, cookie, csrf } = await adminAccess(f, "history@example.com"));
      const created = await call("POST", "/api/admin/licenses", {
        productSlug: f.product.slug,
        licenseKey,
        maxMachines: 1,
        customerName: "Ada",
      });
      expect(created.statusCode).toBe(201);
      await f.createLicense({ licenseKey: manyKey, maxMachines: 500 });
      for (let i = 0; i < 120; i++) {
        await activate(manyKey, `machine-${String(i).padStart(3, "0")}`, start + i * 1000);
      }
    });
    afterAll(async () => {
      await f?.close();
    });

    it("records old and new values of a change through the admin API, and the API's audit shows them", async () => {
      const patched = await call("PATCH", `/api/admin/licenses/${licenseKey}`, {
        maxMachines: 3,
        note: "renewed",
        expiresAt: "2099-01-01T00:00:00Z",
      });
      expect(patched.statusCode).toBe(200);
      const audit = await call(
        "GET",
        `/api/admin/audit?target=${licenseKey}&action=license.update`,
      );
      expect(audit.statusCode).toBe(200);
      const [entry] = audit.json<{ items: AuditEntry[] }>().items;
      expect(entry?.details).toEqual({
        licenseKey: "…WXYZ",
        changed: ["expiresAt", "maxMachines", "note"],
        changes: {
          expiresAt: { from: null, to: "2099-01-01T00:00:00.000Z" },
          maxMachines: { from: 1, to: 3 },
          note: { from: null, to: "renewed" },
        },
      });
      const history = (await get(`${url}/history`)).body;
      expect(history).toContain('aria-current="page">History');
      expect(history).toMatch(/Machine slots: <del>1<\/del> →\s*<ins>3<\/ins>/);
      expect(history).toMatch(/Note: <del>none<\/del> →\s*<ins>renewed<\/ins>/);
      expect(history).toMatch(/Expires: <del>never<\/del> →\s*<ins><time datetime="2099-01-01/);
      expect(history).toContain('all <span class="muted">(API key)</span>');
      // No secret: the API key's, the session's.
      expect(history).not.toContain(apiKey);
      expect(history).not.toContain(cookie.split("=")[1]);
    });

    it("records a change through the dashboard's form, a status change and a move, newest first", async () => {
      await tick();
      await form(`${url}/edit`, {
        maxMachines: "3",
        expiresAt: "2099-01-01T00:00",
        customerName: "Ada Lovelace",
        note: "renewed",
      });
      await tick();
      await form(`${url}/status`, { status: "SUSPENDED" });
      await tick();
      await form(`${url}/move`, { productSlug: f.otherProduct.slug });
      await tick();
      await form(`${url}/move`, { productSlug: f.product.slug });
      const history = (await get(`${url}/history`)).body;
      expect(actionsOn(history).slice(0, 5)).toEqual([
        "license.move",
        "license.move",
        "license.suspend",
        "license.update",
        "license.update",
      ]);
      expect(history).toMatch(/Customer name: <del>Ada<\/del> →\s*<ins>Ada Lovelace<\/ins>/);
      expect(history).toMatch(/Status: <del>ACTIVE<\/del> →\s*<ins>SUSPENDED<\/ins>/);
      expect(history).toMatch(
        new RegExp(`Product: <del>${f.product.slug}</del> →\\s*<ins>${f.otherProduct.slug}</ins>`),
      );
      expect(history).toContain('history@example.com <span class="muted">(admin)</span>');
      const audit = await call(
        "GET",
        `/api/admin/audit?target=${licenseKey}&action=license.suspend`,
      );
      expect(audit.json<{ items: AuditEntry[] }>().items[0]?.details).toEqual({
        licenseKey: "…WXYZ",
        changes: { status: { from: "ACTIVE", to: "SUSPENDED" } },
      });
      await tick();
      await form(`${url}/status`, { status: "ACTIVE" });
    });

    it("shows the machines' events: the app's activations and deactivations, an admin's, a reset", async () => {
      await tick();
      await activate(licenseKey, "laptop", Date.now());
      await tick();
      await activate(licenseKey, "desktop", Date.now());
      await tick();
      const ended = await f.post("/api/license/deactivate", {
        licenseKey,
        machineId: "laptop",
        productSlug: f.product.slug,
      });
      expect(ended.statusCode).toBe(200);
      await tick();
      await form(`${url}/machines/desktop/deactivate`, {});
      await tick();
      await activate(licenseKey, "tablet", Date.now());
      await tick();
      await form(`${url}/reset-machines`, {});
      const history = (await get(`${url}/history`)).body;
      expect(actionsOn(history).slice(0, 6)).toEqual([
        "license.reset_machines",
        "machine.activate",
        "machine.deactivate",
        "machine.deactivate",
        "machine.activate",
        "machine.activate",
      ]);
      expect(history).toContain('the app <span class="muted">(public API)</span>');
      expect(history).toContain('<span class="mono">laptop</span>');
      expect(history).toMatch(/Every machine deactivated <span class="muted"\s*>\(tablet\)/);
    });

    it("pages the history newest first, with a cursor, and refuses a bad cursor on the page", async () => {
      for (let i = 0; i < 110; i++) {
        await call("PATCH", `/api/admin/licenses/${licenseKey}`, { maxMachines: 10 + i });
      }
      const first = (await get(`${url}/history`)).body;
      expect(actionsOn(first)).toHaveLength(100);
      expect(first).toMatch(/Machine slots: <del>118<\/del> →\s*<ins>119<\/ins>/);
      const next = /href="([^"]+)" rel="next"/.exec(first)?.[1]?.replaceAll("&amp;", "&");
      expect(next).toMatch(/^\/admin\/licenses\/HISTORY-LICENSE-0001-WXYZ\/history\?cursor=/);
      const second = (await get(next ?? "")).body;
      expect(second).toContain('rel="first"');
      expect(actionsOn(second).at(-1)).toBe("license.create");
      expect(second).toContain(`${f.product.slug}, 1 machine slot, ACTIVE`);
      const bad = await get(`${url}/history?cursor=nonsense`);
      expect(bad.statusCode).toBe(200);
      expect(bad.body).toContain("cursor is not valid");
      expect((await get("/admin/licenses/NO-SUCH-LICENSE-KEY/history")).statusCode).toBe(404);
    });

    it("pages 120 machines on the license page: the total, first / previous / next", async () => {
      const page = (n?: number) => get(`/admin/licenses/${manyKey}${n ? `?machines=${n}` : ""}`);
      const first = (await page()).body;
      expect(first).toContain("<strong>120</strong> machines");
      expect(first).toContain("(showing 1–50)");
      expect(machinesOn(first)).toHaveLength(50);
      expect(machinesOn(first)[0]).toBe("machine-000");
      expect(first).toContain(`href="/admin/licenses/${manyKey}?machines=2#machines" rel="next"`);
      expect(first).not.toContain('rel="prev"');
      const third = (await page(3)).body;
      expect(machinesOn(third)).toEqual(
        Array.from({ length: 20 }, (_, i) => `machine-${String(100 + i)}`),
      );
      expect(third).toContain(`href="/admin/licenses/${manyKey}#machines" rel="first"`);
      expect(third).toContain(`href="/admin/licenses/${manyKey}?machines=2#machines" rel="prev"`);
      expect(third).not.toContain('rel="next"');
      expect(third).toContain("Page 3 of 3");
      expect((await page(9)).body).toContain("No machines on this page.");
      // A message in the address is no notice.
      const odd = await get(`/admin/licenses/${manyKey}?done=constructor`);
      expect(odd.statusCode).toBe(200);
      expect(odd.body).not.toContain('class="flash"');
      expect((await get(`/admin/licenses/${manyKey}?machines=x`)).body).toContain("(showing 1–50)");
    });

    it("pages 120 machines in the admin API; the license embeds the first 200 and a cursor", async () => {
      const path = `/api/admin/licenses/${manyKey}/machines`;
      type MachinesAnswer = {
        items: { machineId: string; leaseExpiresAt: string | null }[];
        nextCursor: string | null;
        total: number;
        past: unknown[];
      };
      const seen: string[] = [];
      let cursor: string | null = "";
      while (cursor !== null) {
        const query: string = cursor ? `&cursor=${cursor}` : "";
        const response = await call("GET", `${path}?limit=50${query}`);
        expect(response.statusCode).toBe(200);
        const answer = response.json<MachinesAnswer>();
        expect(answer.total).toBe(120);
        expect(answer.past).toEqual([]);
        seen.push(...answer.items.map((m) => m.machineId));
        cursor = answer.nextCursor;
      }
      expect(seen).toEqual(
        Array.from({ length: 120 }, (_, i) => `machine-${String(i).padStart(3, "0")}`),
      );
      // Without a limit: up to 200, as the answer was before it was paginated.
      const all = (await call("GET", path)).json<MachinesAnswer>();
      expect(all.items).toHaveLength(120);
      expect(all.nextCursor).toBeNull();
      expect(Object.keys(all.items[0] ?? {})).toContain("leaseExpiresAt");
      const license = (await call("GET", `/api/admin/licenses/${manyKey}`)).json<LicenseDetail>();
      expect(license.machines).toHaveLength(120);
      expect(license.machinesNextCursor).toBeNull();
      expect(license).not.toHaveProperty("machinesTotal");
      expect((await call("GET", `${path}?limit=0`)).statusCode).toBe(400);
      expect((await call("GET", `${path}?cursor=nonsense`)).statusCode).toBe(400);
    });

    it("embeds the first 200 machines of a larger license, with a cursor to the rest", async () => {
      for (let i = 120; i < 230; i++) {
        await activate(manyKey, `machine-${String(i).padStart(3, "0")}`, start + i * 1000);
      }
      const license = (await call("GET", `/api/admin/licenses/${manyKey}`)).json<LicenseDetail>();
      expect(license.machines).toHaveLength(200);
      expect(license.activeMachines).toBe(230);
      const rest = await call(
        "GET",
        `/api/admin/licenses/${manyKey}/machines?cursor=${license.machinesNextCursor ?? ""}`,
      );
      const answer = rest.json<{ items: { machineId: string }[]; nextCursor: string | null }>();
      expect(answer.items.map((m) => m.machineId)).toEqual(
        Array.from({ length: 30 }, (_, i) => `machine-${String(200 + i)}`),
      );
      expect(answer.nextCursor).toBeNull();
      // The CLI's licenses show lists them all, without the paging fields.
      const shown = await commands["licenses show"]?.run(f.db, [manyKey], {}, commandContext());
      const data = shown?.data as LicenseDetail;
      expect(data.machines).toHaveLength(230);
      expect(data.machines[229]?.machineId).toBe("machine-229");
      expect(data).not.toHaveProperty("machinesNextCursor");
    });
  },
);
