import { afterEach, describe, expect, it } from "vitest";
import { type AppOptions, buildApp } from "../../src/app.js";
import { insecureCookieWarning } from "../../src/http/cookie-security.js";
import { openTestDatabase } from "../helpers/database.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function appWith(
  trustProxy: boolean | string[],
  cookieSecure: AppOptions["cookieSecure"] = "auto",
) {
  const { database, testDatabase } = await openTestDatabase("sqlite");
  const app = await buildApp({ database, trustProxy, cookieSecure });
  cleanups.push(async () => {
    await app.close();
    await database.close();
    await testDatabase.drop();
  });
  return app;
}

describe("TRUST_PROXY and COOKIE_SECURE", () => {
  const loginCookie = async (
    trustProxy: boolean | string[],
    cookieSecure: AppOptions["cookieSecure"] = "auto",
  ) => {
    const app = await appWith(trustProxy, cookieSecure);
    const response = await app.inject({
      method: "GET",
      url: "/admin/login",
      headers: { "x-forwarded-proto": "https", "x-forwarded-for": "203.0.113.9" },
    });
    return String(response.headers["set-cookie"]);
  };

  it("off (default): X-Forwarded-Proto is ignored, cookies are not marked Secure on plain HTTP", async () => {
    expect(await loginCookie(false)).not.toContain("Secure");
  });

  it("on: behind a TLS-terminating proxy, cookies are marked Secure", async () => {
    expect(await loginCookie(true)).toContain("Secure");
  });

  it("with an address list, only those peers are trusted", async () => {
    expect(await loginCookie(["127.0.0.1"])).toContain("Secure");
    expect(await loginCookie(["10.9.9.9"])).not.toContain("Secure");
  });

  it("COOKIE_SECURE=always marks cookies Secure even on plain HTTP; never leaves it off behind TLS", async () => {
    expect(await loginCookie(false, "always")).toContain("Secure");
    expect(await loginCookie(true, "never")).not.toContain("Secure");
  });

  it("a warning at start when session cookies would travel without Secure", () => {
    expect(insecureCookieWarning("auto", false)).toContain("without Secure");
    expect(insecureCookieWarning("never", ["10.0.0.1"])).toContain("COOKIE_SECURE=never");
    expect(insecureCookieWarning("auto", true)).toBeNull();
    expect(insecureCookieWarning("always", false)).toBeNull();
  });
});
