import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdmin } from "../../src/domain/admins/admins.js";
import { SignInThrottle, type SignInVerdict } from "../../src/http/dashboard/sign-in-throttle.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

function booked(verdict: SignInVerdict) {
  if (!verdict.allowed) throw new Error(`refused for ${verdict.retryAfterSeconds} s`);
  return verdict.attempt;
}

/** One failed attempt at `now`; returns how long it had to wait. */
function fail(throttle: SignInThrottle, ip: string, email: string, now: number, exists = true) {
  const attempt = booked(throttle.begin(ip, email, now));
  throttle.end(attempt, { succeeded: false, accountExists: exists }, now + attempt.waitMs);
  return attempt.waitMs;
}

describe("SignInThrottle", () => {
  it("spaces one address's failures on an account 0.5 s, 1 s ... up to 8 s apart", () => {
    const throttle = new SignInThrottle();
    let now = 1_000_000;
    const waits = [];
    for (let i = 0; i < 7; i++) {
      const wait = fail(throttle, "2.2.2.2", "z@example.com", now);
      waits.push(wait);
      now += wait; // the next guess is sent as soon as this one is answered
    }
    expect(waits).toEqual([0, 500, 1000, 2000, 4000, 8000, 8000]);
  });

  it("parallel guesses from one address queue behind each other, and are refused past 8 s", () => {
    const throttle = new SignInThrottle();
    const verdicts = [1, 2, 3, 4, 5, 6].map(() =>
      throttle.begin("2.2.2.2", "z@example.com", 1_000_000),
    );
    expect(verdicts.slice(0, 5).map((v) => booked(v).waitMs)).toEqual([0, 500, 1500, 3500, 7500]);
    expect(verdicts[5]).toEqual({ allowed: false, retryAfterSeconds: 8 });
  });

  it("the admin on a clean address signs in at once while an attacker hammers the account", () => {
    const throttle = new SignInThrottle();
    const now = 1_000_000;
    for (let i = 0; i < 6; i++) {
      // The attacker's guesses, all in flight, none settled.
      throttle.begin("203.0.113.66", "owner@example.com", now);
      const admin = booked(throttle.begin("198.51.100.7", "Owner@example.com", now));
      expect(admin.waitMs).toBe(0);
      throttle.end(admin, { succeeded: true, accountExists: true }, now);
    }
  });

  it("past 100 failures in 15 minutes every attempt on the account waits 1 s, and none is refused", () => {
    const throttle = new SignInThrottle();
    let now = 1_000_000;
    for (let i = 0; i < 100; i++)
      fail(throttle, `10.0.${i >> 8}.${i & 255}`, "owner@example.com", now);
    const admin = booked(throttle.begin("198.51.100.7", "owner@example.com", now));
    expect(admin.waitMs).toBe(1000);
    throttle.end(admin, { succeeded: true, accountExists: true }, now);
    // Another account is not slowed; the account recovers once its window has passed.
    expect(booked(throttle.begin("198.51.100.7", "other@example.com", now)).waitMs).toBe(0);
    now += 15 * 60 * 1000;
    expect(booked(throttle.begin("198.51.100.8", "owner@example.com", now)).waitMs).toBe(0);
  });

  it("failures from many addresses fill the address table without flushing the account's count", () => {
    const throttle = new SignInThrottle({ maxAddressEntries: 1000 });
    const now = 1_000_000;
    for (let i = 0; i < 100; i++) fail(throttle, `10.1.0.${i}`, "owner@example.com", now);
    // Churn: thousands of addresses guessing unknown accounts.
    for (let i = 0; i < 5000; i++) {
      fail(throttle, `10.2.${i >> 8}.${i & 255}`, `nobody${i}@example.com`, now, false);
    }
    expect(throttle.size).toEqual({ addresses: 1000, accounts: 1 });
    expect(booked(throttle.begin("198.51.100.7", "owner@example.com", now)).waitMs).toBe(1000);
  });

  it("unknown accounts are never counted account-wide", () => {
    const throttle = new SignInThrottle();
    for (let i = 0; i < 200; i++)
      fail(throttle, `10.3.0.${i}`, "nobody@example.com", 1_000_000, false);
    expect(throttle.size.accounts).toBe(0);
  });

  it("an address may fail 5 times across accounts before its own spacing starts", () => {
    const throttle = new SignInThrottle();
    const waits = [1, 2, 3, 4, 5, 6, 7].map((i) =>
      fail(throttle, "2.2.2.2", `user${i}@example.com`, 1_000_000),
    );
    expect(waits).toEqual([0, 0, 0, 0, 0, 0, 500]);
  });

  it("a success forgets the pair; 15 quiet minutes forget everything", () => {
    const throttle = new SignInThrottle();
    let now = 1_000_000;
    now += fail(throttle, "4.4.4.4", "w@example.com", now);
    now += fail(throttle, "4.4.4.4", "w@example.com", now);
    const success = booked(throttle.begin("4.4.4.4", "w@example.com", now));
    expect(success.waitMs).toBe(1000);
    throttle.end(success, { succeeded: true, accountExists: true }, now + 1000);
    expect(booked(throttle.begin("4.4.4.4", "w@example.com", now + 1000)).waitMs).toBe(0);

    now += 10_000;
    for (let i = 0; i < 4; i++) now += fail(throttle, "5.5.5.5", "v@example.com", now);
    expect(booked(throttle.begin("5.5.5.5", "v@example.com", now)).waitMs).toBe(4000);
    now += 4000 + 15 * 60 * 1000 + 1;
    expect(booked(throttle.begin("5.5.5.5", "v@example.com", now)).waitMs).toBe(0);
  });
});

describe.each(dialects)("sign-in under attack (%s)", (dialect) => {
  const email = "owner@example.com";
  const password = "the owner's long password";
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
    await createAdmin(f.db, { email, password });
  });
  afterAll(async () => {
    await f.close();
  });

  /** The sign-in form from `ip`: GET for the CSRF cookie, then POST. */
  async function signIn(ip: string, pass: string) {
    const form = await f.app.inject({ method: "GET", url: "/admin/login", remoteAddress: ip });
    const token = /shipkey_login_csrf=([^;]+)/.exec(String(form.headers["set-cookie"]))?.[1] ?? "";
    return f.app.inject({
      method: "POST",
      url: "/admin/login",
      remoteAddress: ip,
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        cookie: `shipkey_login_csrf=${token}`,
      },
      payload: new URLSearchParams({ _csrf: token, email, password: pass }).toString(),
    });
  }

  it("the admin signs in six times out of six while an attacker's guesses are in flight", async () => {
    const attacker = "203.0.113.66";
    for (let i = 0; i < 3; i++)
      expect((await signIn(attacker, "wrong guess")).statusCode).toBe(401);
    // The attacker's fourth guess waits its 2 s turn while the admin signs in.
    const guess = signIn(attacker, "wrong guess");
    await sleep(50);
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push((await signIn("198.51.100.7", password)).statusCode);
    expect(answers).toEqual([303, 303, 303, 303, 303, 303]);
    expect((await guess).statusCode).toBe(401);
  });

  it("a burst of guesses from one address is refused with 429 and Retry-After", async () => {
    const answers = await Promise.all(
      [1, 2, 3, 4, 5, 6, 7].map(() => signIn("203.0.113.77", "wrong guess")),
    );
    const refused = answers.filter((a) => a.statusCode === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(Number(refused[0]?.headers["retry-after"])).toBeGreaterThan(0);
    expect(refused[0]?.body).toContain("Too many sign-in attempts from your address.");
  });
});
