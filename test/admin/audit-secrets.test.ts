import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

/**
 * After a scripted session of admin work, the whole audit table holds no secret: no license
 * key, no API key secret, no password, no session token, no webhook URL's path or query.
 * Licenses are named by id and a masked key, and the dashboard links them to the license.
 */
describe.each(dialects)("the audit log holds no secret (%s)", (dialect) => {
  let f: Fixture;
  let apiKey: string;
  let cookie: string;
  const secrets: string[] = [];
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ apiKey, cookie } = await adminAccess(f, "audit@example.com"));
    secrets.push(apiKey, "a long enough password", cookie.split("=")[1] ?? "");
  });
  afterAll(async () => {
    await f.close();
  });

  const call = (method: "POST" | "PATCH" | "DELETE", url: string, body?: unknown) =>
    callWithApiKey(f, apiKey, method, url, body);

  it("after creating, editing, suspending and deactivating licenses, making API keys and webhooks", async () => {
    const created = await call("POST", "/api/admin/licenses", {
      productSlug: f.product.slug,
      maxMachines: 2,
      customerName: "Ada",
    });
    expect(created.statusCode).toBe(201);
    const { licenseKey } = created.json<{ licenseKey: string }>();
    secrets.push(licenseKey);
    const activated = await f.post("/api/license/activate", {
      licenseKey,
      machineId: "m-1",
      productSlug: f.product.slug,
    });
    expect(activated.statusCode).toBe(200);
    const key = encodeURIComponent(licenseKey);
    expect((await call("PATCH", `/api/admin/licenses/${key}`, { maxMachines: 3 })).statusCode).toBe(
      200,
    );
    for (const status of ["SUSPENDED", "ACTIVE"]) {
      expect((await call("PATCH", `/api/admin/licenses/${key}`, { status })).statusCode).toBe(200);
    }
    const deactivated = await call("DELETE", `/api/admin/licenses/${key}/machines/m-1`);
    expect(deactivated.statusCode).toBeLessThan(300);
    const newKey = await call("POST", "/api/admin/api-keys", {
      name: "ci",
      scopes: ["releases:write"],
    });
    expect(newKey.statusCode).toBe(201);
    secrets.push(newKey.json<{ key: string }>().key);
    // A webhook URL's path and query may be a bearer secret (Slack, Discord, Zapier).
    const hook = await call("POST", "/api/admin/webhook-endpoints", {
      url: "https://hooks.slack.com/services/T0AUDIT/B0AUDIT/SlackPathSecret",
      events: ["license.created"],
    });
    expect(hook.statusCode).toBe(201);
    const moved = await call(
      "PATCH",
      `/api/admin/webhook-endpoints/${hook.json<{ id: string }>().id}`,
      {
        url: "https://crm.example.com/in?token=QueryTokenSecret",
      },
    );
    expect(moved.statusCode).toBe(200);
    secrets.push("SlackPathSecret", "QueryTokenSecret", "/services/T0AUDIT");
    const signIn = await f.app.inject({
      method: "POST",
      url: "/admin/login",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: "email=audit%40example.com&password=a+long+enough+password",
    });
    expect(signIn.statusCode).toBeLessThan(500);

    const rows = await f.db.selectFrom("audit_log").selectAll().execute();
    expect(rows.length).toBeGreaterThanOrEqual(5);
    const table = JSON.stringify(rows);
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(8);
      expect(table).not.toContain(secret);
    }
    const license = await f.db
      .selectFrom("licenses")
      .select("id")
      .where("license_key", "=", licenseKey)
      .executeTakeFirstOrThrow();
    const entries = rows.filter((row) => row.target_type === "license");
    expect(entries.length).toBeGreaterThanOrEqual(4);
    for (const entry of entries) {
      expect(entry.target_id).toBe(license.id);
      expect(JSON.parse(entry.details)).toMatchObject({ licenseKey: `…${licenseKey.slice(-4)}` });
    }

    // The dashboard links the entry to the license.
    const page = await f.app.inject({ url: "/admin/audit", headers: { cookie } });
    expect(page.body).toContain(`/admin/licenses/by-id/${license.id}`);
    expect(page.body).not.toContain(licenseKey);
    const followed = await f.app.inject({
      url: `/admin/licenses/by-id/${license.id}`,
      headers: { cookie },
    });
    expect(followed.statusCode).toBe(302);
    expect(followed.headers.location).toBe(`/admin/licenses/${key}`);

    // The license's History tab shows the old and new values, and its entries hold no secret
    // either (the page names its own license, outside the entries).
    const history = await f.app.inject({
      url: `/admin/licenses/${key}/history`,
      headers: { cookie },
    });
    expect(history.statusCode).toBe(200);
    const historyEntries = /<table class="history">[\s\S]*<\/table>/.exec(history.body)?.[0] ?? "";
    expect(historyEntries).toMatch(/Machine slots: <del>2<\/del> →\s*<ins>3<\/ins>/);
    expect(historyEntries).toContain('data-action="machine.activate"');
    for (const secret of secrets) expect(historyEntries).not.toContain(secret);
  });
});
