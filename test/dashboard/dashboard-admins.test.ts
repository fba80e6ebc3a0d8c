import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdmin, createSession, findSession } from "../../src/domain/admins/admins.js";
import { dialects } from "../helpers/database.js";
import { adminAccess } from "../helpers/admin-access.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { noticeOf } from "../helpers/dashboard.js";

describe.each(dialects)("dashboard: admins page and post/redirect/get (%s)", (dialect) => {
  let f: Fixture;
  let cookie: string;
  let csrf: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ cookie, csrf } = await adminAccess(f, "me@example.com"));
  });
  afterAll(async () => {
    await f.close();
  });

  const form = (url: string, fields: Record<string, string>, as = { cookie, csrf }) =>
    f.app.inject({
      method: "POST",
      url,
      headers: { cookie: as.cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ _csrf: as.csrf, ...fields }).toString(),
    });
  const get = (url: string, extraCookie = "") =>
    f.app.inject({ method: "GET", url, headers: { cookie: `${cookie}${extraCookie}` } });

  /** Another admin, signed in: their cookie and CSRF token. */
  async function otherAdmin(email: string) {
    const account = await createAdmin(f.db, { email, password: "a long enough password" });
    const session = await createSession(f.db, account.id);
    return {
      token: session.token,
      cookie: `shipkey_session=${session.token}`,
      csrf: session.csrfToken,
    };
  }

  const auditActions = async (email: string) =>
    (
      await f.db
        .selectFrom("audit_log")
        .select("action")
        .where("target_id", "=", email)
        .orderBy("at")
        .execute()
    ).map((e) => e.action);

  it("lists the admins, with an Admins entry in the navigation", async () => {
    const page = await get("/admin/admins");
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('href="/admin/admins"');
    expect(page.body).toContain('data-admin="me@example.com"');
  });

  it("adds an admin with a 303 to the list; a POST without the CSRF token is refused", async () => {
    const sneaky = await f.app.inject({
      method: "POST",
      url: "/admin/admins",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: "email=sneaky%40example.com&password=a+long+enough+password",
    });
    expect(sneaky.statusCode).toBe(403);
    const added = await form("/admin/admins", {
      email: "New@example.com",
      password: "  a long enough password  ",
    });
    expect(added.statusCode).toBe(303);
    expect(added.headers.location).toBe("/admin/admins");
    const page = await get("/admin/admins", `; shipkey_notice=${noticeOf(added)}`);
    expect(page.body).toMatch(/<p class="flash" role="status">\s*Admin added\.\s*<\/p>/);
    expect(page.body).toContain('data-admin="new@example.com"');
    expect(page.body).not.toContain("sneaky@example.com");
    expect(await auditActions("new@example.com")).toEqual(["admin.create"]);
  });

  it("a refused addition re-renders the form with its message (400), writing nothing", async () => {
    const short = await form("/admin/admins", { email: "short@example.com", password: "short" });
    expect(short.statusCode).toBe(400);
    expect(short.body).toContain("password must be at least 12 characters");
    expect(short.body).toContain('value="short@example.com"');
    expect(await auditActions("short@example.com")).toEqual([]);
  });

  it("resetting another admin's password ends their sessions and is audited", async () => {
    const other = await otherAdmin("reset@example.com");
    const reset = await form("/admin/admins/reset-password", {
      email: "reset@example.com",
      password: "another long password",
    });
    expect(reset.statusCode).toBe(303);
    expect(reset.headers.location).toBe("/admin/admins");
    const shown = await get("/admin/admins", `; shipkey_notice=${noticeOf(reset)}`);
    expect(shown.body).toContain("Password reset; that admin&#39;s sessions have ended.");
    expect(await findSession(f.db, other.token)).toBeNull();
    expect(await auditActions("reset@example.com")).toEqual(["admin.reset_password"]);
  });

  it("removing an admin ends their sessions; an unknown one is a 404 page", async () => {
    const other = await otherAdmin("gone@example.com");
    const removed = await form("/admin/admins/remove", { email: "gone@example.com" });
    expect(removed.statusCode).toBe(303);
    expect(removed.headers.location).toBe("/admin/admins");
    expect(await findSession(f.db, other.token)).toBeNull();
    expect((await get("/admin/admins")).body).not.toContain("gone@example.com");
    expect(await auditActions("gone@example.com")).toEqual(["admin.remove"]);
    const unknown = await form("/admin/admins/remove", { email: "gone@example.com" });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).toContain("no admin with email gone@example.com");
  });

  it("the last admin cannot be removed (409 page); removing oneself signs out", async () => {
    const last = await otherAdmin("last@example.com");
    for (const email of ["new@example.com", "reset@example.com"]) {
      expect((await form("/admin/admins/remove", { email })).statusCode).toBe(303);
    }
    const self = await form("/admin/admins/remove", { email: "me@example.com" });
    expect(self.statusCode).toBe(303);
    expect(self.headers.location).toBe("/admin/login");
    expect((await get("/admin/admins")).headers.location).toBe("/admin/login");
    const refused = await form(
      "/admin/admins/remove",
      { email: "last@example.com" },
      { cookie: last.cookie, csrf: last.csrf },
    );
    expect(refused.statusCode).toBe(409);
    expect(refused.body).toContain("the last admin cannot be removed");
    ({ cookie, csrf } = await otherAdmin("me2@example.com"));
  });

  it("a new API key's secret is shown once after a 303, never in the URL or the cookie", async () => {
    const count = async () =>
      Number(
        (
          await f.db
            .selectFrom("api_keys")
            .select((eb) => eb.fn.countAll<number>().as("n"))
            .where("name", "=", "once")
            .executeTakeFirstOrThrow()
        ).n,
      );
    const created = await form("/admin/api-keys", { name: "once", scopes: "releases:read" });
    expect(created.statusCode).toBe(303);
    expect(created.headers.location).toBe("/admin/api-keys");
    const flash = /shipkey_notice=([^;]+)/.exec(String(created.headers["set-cookie"]))?.[1] ?? "";
    expect(String(created.headers["set-cookie"])).toMatch(/HttpOnly.*SameSite=Strict/i);

    const shown = await get("/admin/api-keys", `; shipkey_notice=${flash}`);
    const secret = /<code id="new-secret">([^<]+)<\/code/.exec(shown.body)?.[1] ?? "";
    expect(secret).toMatch(/^shk_/);
    expect(flash).not.toContain(secret);
    expect(Buffer.from(flash, "base64url").toString("latin1")).not.toContain(secret);
    expect(String(shown.headers["set-cookie"])).toMatch(
      /shipkey_notice=;.*Expires=Thu, 01 Jan 1970/,
    );

    // The browser's reload: a GET without the cleared cookie shows no secret and creates no key.
    const reloaded = await get("/admin/api-keys");
    expect(reloaded.body).not.toContain(secret);
    expect(reloaded.body).not.toContain('id="new-secret"');
    // The same sealed cookie under another session opens to nothing.
    const other = await otherAdmin("flash@example.com");
    const stolen = await f.app.inject({
      method: "GET",
      url: "/admin/api-keys",
      headers: { cookie: `${other.cookie}; shipkey_notice=${flash}` },
    });
    expect(stolen.statusCode).toBe(200);
    expect(stolen.body).not.toContain(secret);
    expect(await count()).toBe(1);
  });

  it("a refused API key form is a 400 re-render, and creates nothing", async () => {
    const refused = await form("/admin/api-keys", { name: "none" });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain("at least one scope");
  });
});
