import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { cookieAfter } from "../helpers/dashboard.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

/**
 * The API Keys page: who created each key, how many active keys were created from a key, and
 * the revoke form's box that revokes them with it (a form post with the session's CSRF token).
 */
describe.each(dialects)("dashboard: API keys and the keys created from them (%s)", (dialect) => {
  let f: Fixture;
  let cookie: string;
  let csrf: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ cookie, csrf } = await adminAccess(f, "keys@example.com"));
  });
  afterAll(async () => {
    await f.close();
  });

  const form = (url: string, fields: Record<string, string>) =>
    f.app.inject({
      method: "POST",
      url,
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString(),
    });
  /** A page as the browser shows it, after the POST `after` (with the notice it left). */
  const page = async (url = "/admin/api-keys", after?: { headers: Record<string, unknown> }) =>
    (
      await f.app.inject({
        method: "GET",
        url,
        headers: { cookie: after ? cookieAfter(cookie, after) : cookie },
      })
    ).body;

  /** The signed-in admin's new key, made through the page's form; its id and secret. */
  async function adminKey(name: string): Promise<{ id: string; key: string }> {
    const created = await form("/admin/api-keys", {
      name,
      scopes: "api-keys:write",
    });
    expect(created.statusCode).toBe(303);
    const row = await f.db
      .selectFrom("api_keys")
      .select("id")
      .where("name", "=", name)
      .executeTakeFirstOrThrow();
    // The secret is shown once on the next page: the notice cookie carries it there.
    const flash = /shipkey_notice=([^;]+)/.exec(String(created.headers["set-cookie"]))?.[1] ?? "";
    const shown = await f.app.inject({
      method: "GET",
      url: "/admin/api-keys",
      headers: { cookie: `${cookie}; shipkey_notice=${flash}` },
    });
    const key = /<code id="new-secret">([^<]+)<\/code/.exec(shown.body)?.[1] ?? "";
    return { id: row.id, key };
  }

  async function childOf(parent: { key: string }, name: string) {
    const response = await callWithApiKey(f, parent.key, "POST", "/api/admin/api-keys", {
      name,
      scopes: ["api-keys:write"],
    });
    expect(response.statusCode, response.body).toBe(201);
    return response.json() as { id: string; key: string };
  }

  /** The table row of a key on the page. */
  const rowOf = (body: string, id: string) =>
    new RegExp(`<tr data-key="${id}">([\\s\\S]*?)</tr>`).exec(body)?.[1] ?? "";

  const status = async (key: { key: string }) =>
    (await callWithApiKey(f, key.key, "GET", "/api/admin/api-keys")).statusCode;

  it("shows who created each key: the admin, the API key, or unknown", async () => {
    const root = await adminKey("page root");
    const child = await childOf(root, "page child");
    const body = await page();
    expect(body).toContain("<th>Created by</th>");
    expect(rowOf(body, root.id)).toMatch(
      /keys@example\.com\s*<span class="muted">\(admin\)<\/span>/,
    );
    expect(rowOf(body, child.id)).toMatch(/page root\s*<span class="muted">\(API key\)<\/span>/);
    const ci = await f.db
      .selectFrom("api_keys")
      .select("id")
      .where("name", "=", "ci")
      .executeTakeFirstOrThrow();
    expect(rowOf(body, ci.id)).toContain("<em>unknown</em>");
  });

  it("says how many active keys were created from a key; the box unticked revokes it alone", async () => {
    const root = await adminKey("count root");
    const child = await childOf(root, "count child");
    const grandchild = await childOf(child, "count grandchild");
    const body = await page();
    expect(rowOf(body, root.id)).toContain("Also revoke the 2 active keys created from it");
    expect(rowOf(body, root.id)).toContain('<input type="checkbox" name="withCreated" />');
    expect(rowOf(body, child.id)).toContain("Also revoke the 1 active key created from it");
    // Nothing below it: the plain form.
    expect(rowOf(body, grandchild.id)).not.toContain("withCreated");
    expect(rowOf(body, grandchild.id)).toContain(
      'data-confirm="Revoke count grandchild? Anything using it stops working at once."',
    );

    const revoked = await form(`/admin/api-keys/${root.id}/revoke`, {});
    expect(revoked.statusCode).toBe(303);
    expect(revoked.headers.location).toBe("/admin/api-keys");
    expect(await status(root)).toBe(401);
    expect(await status(child)).toBe(200);
    expect(await status(grandchild)).toBe(200);

    // Revoked, with active keys below it: the page offers to revoke those.
    const after = await page("/admin/api-keys", revoked);
    expect(after).toContain("API key revoked.");
    expect(rowOf(after, root.id)).toContain("Revoke the 2 active keys created from it");
    expect(rowOf(after, root.id)).toContain('name="withCreated" value="on"');
  });

  it("the box ticked revokes the keys created from it, and the page says how many", async () => {
    const root = await adminKey("box root");
    const child = await childOf(root, "box child");
    const grandchild = await childOf(child, "box grandchild");
    const revoked = await form(`/admin/api-keys/${root.id}/revoke`, { withCreated: "on" });
    expect(revoked.statusCode).toBe(303);
    expect(revoked.headers.location).toBe("/admin/api-keys");
    for (const key of [root, child, grandchild]) expect(await status(key)).toBe(401);
    const after = await page("/admin/api-keys", revoked);
    expect(after).toContain("API key revoked, with the 2 keys created from it.");
    // Nothing active is left below it: no form on its row.
    expect(rowOf(after, root.id)).not.toContain("<form");
    const entries = await f.db
      .selectFrom("audit_log")
      .select("target_id")
      .where("action", "=", "api_key.revoke")
      .where("target_id", "in", [root.id, child.id, grandchild.id])
      .execute();
    expect(entries).toHaveLength(3);
  });

  it("a revoked key's remaining keys are revoked from its row; a post without the CSRF token is refused", async () => {
    const root = await adminKey("late root");
    const child = await childOf(root, "late child");
    expect((await form(`/admin/api-keys/${root.id}/revoke`, {})).statusCode).toBe(303);
    const sneaky = await f.app.inject({
      method: "POST",
      url: `/admin/api-keys/${root.id}/revoke`,
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: "withCreated=on",
    });
    expect(sneaky.statusCode).toBe(403);
    expect(await status(child)).toBe(200);
    const revoked = await form(`/admin/api-keys/${root.id}/revoke`, { withCreated: "on" });
    expect(revoked.headers.location).toBe("/admin/api-keys");
    expect(await status(child)).toBe(401);
    expect(await page("/admin/api-keys", revoked)).toContain(
      "API key revoked, with the 1 key created from it.",
    );
  });

  it("the message is shown once, from the notice, never from the address", async () => {
    const key = await adminKey("once revoked");
    const revoked = await form(`/admin/api-keys/${key.id}/revoke`, {});
    expect(await page("/admin/api-keys", revoked)).toContain("API key revoked.");
    expect(await page("/admin/api-keys")).not.toContain("API key revoked");
    expect(await page("/admin/api-keys?done=revoked&also=2")).not.toContain("API key revoked");
  });
});
