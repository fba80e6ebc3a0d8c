import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commands } from "../../src/cli/commands.js";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import { normalizeLicenseKey } from "../../src/domain/licenses/license-key.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { commandContext } from "../helpers/cli.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { cookieAfter } from "../helpers/dashboard.js";

describe("normalizeLicenseKey", () => {
  const key = "7K2QD-M9XRT-4HZ1B-C8N3V-PQW5E";
  it("matches a generated key whatever its case, dashes and surrounding whitespace", () => {
    for (const typed of [
      key,
      ` ${key} `,
      `${key}\n`,
      key.toLowerCase(),
      key.replaceAll("-", ""),
      `\t${key.replaceAll("-", "").toLowerCase()}  `,
    ]) {
      expect(normalizeLicenseKey(typed), typed).toBe(key);
    }
  });
  it("keeps a custom key as stored, only trimmed", () => {
    expect(normalizeLicenseKey(" my-Custom.Key_1 ")).toBe("my-Custom.Key_1");
    // 25 characters, but not all of the generated alphabet (I, L, O, U are not in it).
    expect(normalizeLicenseKey("ilouu-ilouu-ilouu-ilouu-ilouu")).toBe(
      "ilouu-ilouu-ilouu-ilouu-ilouu",
    );
  });
});

describe.each(dialects)("seats: reset, move, delete, keys as typed (%s)", (dialect) => {
  let f: Fixture;
  let apiKey: string;
  let cookie: string;
  let csrf: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ apiKey, cookie, csrf } = await adminAccess(f, "seats@example.com"));
  });
  afterAll(async () => {
    await f.close();
  });

  const api = (method: "GET" | "POST" | "DELETE", url: string, body?: unknown) =>
    callWithApiKey(f, apiKey, method, url, body);
  const activate = (licenseKey: string, machineId: string, productSlug = f.product.slug) =>
    f.post("/api/license/activate", { licenseKey, machineId, productSlug });
  const form = (url: string, fields: Record<string, string> = {}) =>
    f.app.inject({
      method: "POST",
      url,
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString(),
    });
  const actions = async (licenseId: string) =>
    (
      await f.db
        .selectFrom("audit_log")
        .select(["action", "actor_type"])
        .where("target_id", "=", licenseId)
        .orderBy("at")
        .orderBy("id")
        .execute()
    ).map((row) => `${row.action}:${row.actor_type}`);
  const licenseId = async (licenseKey: string) =>
    (
      await f.db
        .selectFrom("licenses")
        .select("id")
        .where("license_key", "=", licenseKey)
        .executeTakeFirstOrThrow()
    ).id;

  it("a generated key typed with spaces, lower case or without dashes is the license", async () => {
    const licenseKey = await f.createLicense({ maxMachines: 2 });
    const typed = ` ${licenseKey.replaceAll("-", "").toLowerCase()} `;
    expect((await activate(typed, "typed")).statusCode).toBe(200);
    const validate = await f.post("/api/license/validate", {
      licenseKey: `${licenseKey} `,
      machineId: "typed",
      productSlug: f.product.slug,
    });
    expect(validate.statusCode).toBe(200);
    // Far more than the unknown-key budget (20 per 15 minutes): none of these spends it.
    for (let i = 0; i < 25; i++) {
      const answer = await f.post("/api/license/validate", {
        licenseKey: `${licenseKey}\n`,
        machineId: "typed",
        productSlug: f.product.slug,
      });
      expect(answer.statusCode).toBe(200);
    }
  });

  it("resets, moves and deletes through the admin API, audited", async () => {
    const licenseKey = await f.createLicense({ maxMachines: 3 });
    for (const machine of ["one", "two"]) {
      expect((await activate(licenseKey, machine)).statusCode).toBe(200);
    }
    const checkout = await f.post("/api/license/checkout", {
      licenseKey,
      machineId: "one",
      productSlug: f.product.slug,
    });
    expect(checkout.statusCode).toBe(200);
    const refused = await api("DELETE", `/api/admin/licenses/${licenseKey}`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: "LICENSE_IN_USE" });

    const reset = await api("POST", `/api/admin/licenses/${licenseKey}/reset-machines`);
    expect(reset.statusCode).toBe(200);
    expect(reset.json()).toEqual({ licenseKey, machineIds: ["one", "two"], certificatesHeld: 1 });
    const detail = await api("GET", `/api/admin/licenses/${licenseKey}`);
    expect(detail.json()).toMatchObject({ activeMachines: 0, machines: [] });
    // The certificate still counts: the offline limit (3 slots + 1) is not reset with the slots.
    const held = await f.db
      .selectFrom("license_certificates")
      .select("machine_id")
      .where("license_id", "=", await licenseId(licenseKey))
      .execute();
    expect(held.map((row) => row.machine_id)).toEqual(["one"]);

    const moved = await api("POST", `/api/admin/licenses/${licenseKey}/move`, {
      productSlug: f.otherProduct.slug,
    });
    expect(moved.statusCode).toBe(200);
    expect(moved.json()).toMatchObject({ licenseKey, product: f.otherProduct.slug });
    const nowhere = await api("POST", `/api/admin/licenses/${licenseKey}/move`, {
      productSlug: "no-such-product",
    });
    expect(nowhere.statusCode).toBe(404);
    expect((await activate(licenseKey, "three", f.otherProduct.slug)).statusCode).toBe(200);
    expect((await activate(licenseKey, "four", f.product.slug)).statusCode).toBe(403);
    expect((await api("POST", `/api/admin/licenses/${licenseKey}/reset-machines`)).json()).toEqual({
      licenseKey,
      machineIds: ["three"],
      certificatesHeld: 1,
    });

    const id = await licenseId(licenseKey);
    const deleted = await api("DELETE", `/api/admin/licenses/${licenseKey}`);
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toEqual({
      deleted: true,
      licenseKey,
      product: f.otherProduct.slug,
    });
    expect((await api("GET", `/api/admin/licenses/${licenseKey}`)).statusCode).toBe(404);
    expect((await actions(id)).filter((a) => !a.startsWith("license.create"))).toEqual([
      "license.reset_machines:api_key",
      "license.move:api_key",
      "license.reset_machines:api_key",
      "license.delete:api_key",
    ]);
  });

  it("a key limited to products moves a license only between products it holds", async () => {
    const limited = await createApiKey(f.db, {
      name: "one product",
      scopes: ["licenses:read", "licenses:write"],
      productIds: [f.product.id],
    });
    const licenseKey = await f.createLicense({ maxMachines: 1 });
    const move = await callWithApiKey(
      f,
      limited.key,
      "POST",
      `/api/admin/licenses/${licenseKey}/move`,
      {
        productSlug: f.otherProduct.slug,
      },
    );
    expect(move.statusCode).toBe(403);
    expect(move.json()).toMatchObject({ code: "PRODUCT_NOT_IN_KEY" });
    expect((await api("GET", `/api/admin/licenses/${licenseKey}`)).json()).toMatchObject({
      product: f.product.slug,
    });
  });

  it("resets, moves and deletes through the CLI", async () => {
    const licenseKey = await f.createLicense({ maxMachines: 2 });
    expect((await activate(licenseKey, "cli-one")).statusCode).toBe(200);
    const run = (name: string, args: string[], options = {}) =>
      commands[name]?.run(f.db, args, options, commandContext());
    await expect(run("licenses delete", [licenseKey])).rejects.toMatchObject({
      code: "LICENSE_IN_USE",
    });
    expect((await run("licenses reset-machines", [licenseKey]))?.data).toMatchObject({
      machineIds: ["cli-one"],
    });
    expect(
      (await run("licenses move", [licenseKey], { product: f.otherProduct.slug }))?.data,
    ).toMatchObject({ product: f.otherProduct.slug });
    expect((await run("licenses delete", [licenseKey]))?.data).toEqual({
      deleted: true,
      licenseKey,
      product: f.otherProduct.slug,
    });
    expect(
      (await run("products set-machine-lease", [f.otherProduct.slug], { days: "14" }))?.data,
    ).toMatchObject({ machineLeaseDays: 14 });
    expect(
      (await run("products set-machine-lease", [f.otherProduct.slug], { days: "none" }))?.data,
    ).toMatchObject({ machineLeaseDays: null });
  });

  it("resets, moves and deletes from the dashboard, which shows the seats", async () => {
    const licenseKey = await f.createLicense({ maxMachines: 2 });
    expect((await activate(licenseKey, "dash-one")).statusCode).toBe(200);
    const page = `/admin/licenses/${licenseKey}`;
    const keys = `/admin/products/${f.product.slug}/keys`;
    expect((await form(`${keys}/machine-lease`, { machineLeaseDays: "0" })).statusCode).toBe(400);
    expect((await form(`${keys}/machine-lease`, { machineLeaseDays: "30" })).statusCode).toBe(303);
    const shown = await f.app.inject({ url: page, headers: { cookie } });
    expect(shown.statusCode).toBe(200);
    expect(shown.body).toContain("Reset machines");
    expect(shown.body).toContain("Machines unseen for 30 days are deactivated.");
    expect(shown.body).toContain("Deactivations by the app in the last 30 days: 0");
    expect(shown.body).toMatch(/class="lease-expires">\s*<time/);
    expect(shown.body).not.toContain("Delete license");

    const reset = await form(`${page}/reset-machines`);
    expect(reset.headers.location).toBe(page);
    const after = await f.app.inject({
      url: page,
      headers: { cookie: cookieAfter(cookie, reset) },
    });
    expect(after.body).toContain("Every machine deactivated");
    expect(after.body).toContain("Delete license");
    const moved = await form(`${page}/move`, { productSlug: f.otherProduct.slug });
    expect(moved.statusCode).toBe(303);
    expect((await api("GET", `/api/admin/licenses/${licenseKey}`)).json()).toMatchObject({
      product: f.otherProduct.slug,
    });

    // A product with licenses cannot be deleted; the refusal links to them.
    const refused = await form(`/admin/products/${f.otherProduct.slug}/delete`);
    expect(refused.statusCode).toBe(409);
    expect(refused.body).toContain(`href="/admin/licenses?product=${f.otherProduct.slug}"`);

    const deleted = await form(`${page}/delete`);
    expect(deleted.statusCode).toBe(303);
    expect(deleted.headers.location).toBe("/admin/licenses");
    expect((await api("GET", `/api/admin/licenses/${licenseKey}`)).statusCode).toBe(404);
    expect((await form(`${keys}/machine-lease`, { machineLeaseDays: "" })).statusCode).toBe(303);
  });
});
