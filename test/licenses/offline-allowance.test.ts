import http from "node:http";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryStorage, ShipkeyClient, ShipkeyError } from "../../packages/client/src/index.js";
import { commands } from "../../src/cli/commands.js";
import { prune } from "../../src/domain/maintenance/prune.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { commandContext } from "../helpers/cli.js";
import { cookieAfter } from "../helpers/dashboard.js";

const day = 86_400_000;
const refusal = '{"error":"Offline limit reached","code":"OFFLINE_LIMIT_REACHED","success":false}';
const full = '{"error":"Maximum machines reached","code":"MAX_MACHINES_REACHED","success":false}';

describe.each(dialects)("offline allowance: certificates per license (%s)", (dialect) => {
  let f: Fixture;
  let apiKey: string;
  let cookie: string;
  let csrf: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ apiKey, cookie, csrf } = await adminAccess(f, "offline@example.com"));
  });
  afterAll(async () => {
    await f.close();
  });

  const slug = () => f.product.slug;
  const body = (licenseKey: string, machineId: string) => ({
    licenseKey,
    machineId,
    productSlug: slug(),
  });
  const activate = (licenseKey: string, machineId: string) =>
    f.post("/api/license/activate", body(licenseKey, machineId));
  const checkout = (licenseKey: string, machineId: string, ttlSeconds?: number) =>
    f.post("/api/license/checkout", { ...body(licenseKey, machineId), ttlSeconds });
  const deactivate = (licenseKey: string, machineId: string) =>
    f.post("/api/license/deactivate", { licenseKey, machineId });
  const setAllowance = async (offlineAllowance: number, productSlug = slug()) => {
    const answer = await callWithApiKey(f, apiKey, "PATCH", `/api/admin/products/${productSlug}`, {
      offlineAllowance,
    });
    expect(answer.statusCode).toBe(200);
  };
  const licenseIdOf = async (licenseKey: string) =>
    (
      await f.db
        .selectFrom("licenses")
        .select("id")
        .where("license_key", "=", licenseKey)
        .executeTakeFirstOrThrow()
    ).id;
  /** Machines of the license holding an unexpired certificate, as the server records them. */
  const holders = async (licenseKey: string, now = Date.now()) =>
    (
      await f.db
        .selectFrom("license_certificates")
        .select("machine_id")
        .where("license_id", "=", await licenseIdOf(licenseKey))
        .where("expires_at", ">", now)
        .orderBy("machine_id")
        .execute()
    ).map((row) => row.machine_id);

  it("a 1-seat license cycled activate → checkout → deactivate ten times: at most 2 certificates at once", async () => {
    const licenseKey = await f.createLicense({ maxMachines: 1 });
    const outcomes: number[] = [];
    for (let i = 0; i < 10; i++) {
      const machine = `cycle-${i}`;
      const activated = await activate(licenseKey, machine);
      outcomes.push(activated.statusCode);
      if (activated.statusCode !== 200) {
        // The two machines running offline fill maxMachines + the allowance.
        expect(activated.body).toBe(full);
        continue;
      }
      expect((await checkout(licenseKey, machine)).statusCode).toBe(200);
      // Deactivating still frees the slot at once.
      expect((await deactivate(licenseKey, machine)).statusCode).toBe(200);
      expect((await holders(licenseKey)).length).toBeLessThanOrEqual(2);
    }
    expect(outcomes).toEqual([200, 200, 403, 403, 403, 403, 403, 403, 403, 403]);
    expect(await holders(licenseKey)).toEqual(["cycle-0", "cycle-1"]);
  });

  it("online use is unaffected: a machine whose checkout is refused still validates", async () => {
    const licenseKey = await f.createLicense({ maxMachines: 1 });
    await activate(licenseKey, "a");
    expect((await checkout(licenseKey, "a")).statusCode).toBe(200);
    await deactivate(licenseKey, "a");
    await activate(licenseKey, "b");
    expect((await checkout(licenseKey, "b")).statusCode).toBe(200);
    // The allowance lowered below what runs: b's next certificate is refused, its online use not.
    await setAllowance(0);
    try {
      expect((await checkout(licenseKey, "b")).json()).toMatchObject({
        code: "OFFLINE_LIMIT_REACHED",
      });
      expect((await f.post("/api/license/validate", body(licenseKey, "b"))).json()).toMatchObject({
        valid: true,
      });
    } finally {
      await setAllowance(1);
    }
  });

  it("a machine refreshing its own certificate never counts twice, and keeps the later exp", async () => {
    await setAllowance(0);
    try {
      const licenseKey = await f.createLicense({ maxMachines: 1 });
      await activate(licenseKey, "solo");
      const first = await checkout(licenseKey, "solo");
      expect(first.statusCode).toBe(200);
      for (let i = 0; i < 3; i++) {
        expect((await checkout(licenseKey, "solo", 60)).statusCode).toBe(200);
      }
      const row = await f.db
        .selectFrom("license_certificates")
        .select("expires_at")
        .where("license_id", "=", await licenseIdOf(licenseKey))
        .executeTakeFirstOrThrow();
      expect(new Date(Number(row.expires_at)).toISOString()).toBe(
        first.json<{ expiresAt: string }>().expiresAt,
      );
      // With no allowance, a second machine waits while "solo" holds its certificate.
      await deactivate(licenseKey, "solo");
      expect((await activate(licenseKey, "second")).body).toBe(full);
    } finally {
      await setAllowance(1);
    }
  });

  it("a certificate stops counting at its exp; prune then deletes its record", async () => {
    const licenseKey = await f.createLicense({ maxMachines: 1 });
    for (const machine of ["old-1", "old-2"]) {
      await activate(licenseKey, machine);
      expect((await checkout(licenseKey, machine)).statusCode).toBe(200);
      await deactivate(licenseKey, machine);
    }
    expect((await activate(licenseKey, "new")).body).toBe(full);
    const licenseId = await licenseIdOf(licenseKey);
    await f.db
      .updateTable("license_certificates")
      .set({ expires_at: Date.now() - 1000 })
      .where("license_id", "=", licenseId)
      .where("machine_id", "=", "old-1")
      .execute();
    expect((await activate(licenseKey, "new")).statusCode).toBe(200);
    expect((await checkout(licenseKey, "new")).statusCode).toBe(200);
    const counts = await prune(f.db, { activationHistoryMs: 365 * day });
    expect(counts.certificates).toBeGreaterThanOrEqual(1);
    const left = await f.db
      .selectFrom("license_certificates")
      .select("machine_id")
      .where("license_id", "=", licenseId)
      .orderBy("machine_id")
      .execute();
    expect(left.map((r) => r.machine_id)).toEqual(["new", "old-2"]);
  });

  it("validate's checks come first: a machine not activated gets validate's error, not the limit", async () => {
    const licenseKey = await f.createLicense({ maxMachines: 1 });
    for (const machine of ["x", "y"]) {
      await activate(licenseKey, machine);
      await checkout(licenseKey, machine);
      await deactivate(licenseKey, machine);
    }
    const rows: Array<[string, unknown, number, string]> = [
      ["unknown key", body("NO-SUCH-KEY-000000", "z"), 404, "LICENSE_NOT_FOUND"],
      ["machine not activated", body(licenseKey, "z"), 403, "MACHINE_NOT_ACTIVATED"],
      [
        "other product",
        { ...body(licenseKey, "x"), productSlug: f.otherProduct.slug },
        403,
        "LICENSE_PRODUCT_MISMATCH",
      ],
    ];
    for (const [, request, status, code] of rows) {
      const answer = await f.post("/api/license/checkout", request);
      expect([answer.statusCode, answer.json<{ code: string }>().code]).toEqual([status, code]);
    }
  });

  it("an admin's deactivation keeps the certificate counting", async () => {
    const licenseKey = await f.createLicense({ maxMachines: 1 });
    for (const machine of ["p", "q"]) {
      await activate(licenseKey, machine);
      await checkout(licenseKey, machine);
      const removed = await callWithApiKey(
        f,
        apiKey,
        "DELETE",
        `/api/admin/licenses/${licenseKey}/machines/${machine}`,
      );
      expect(removed.statusCode).toBe(200);
    }
    expect(await holders(licenseKey)).toEqual(["p", "q"]);
    expect((await activate(licenseKey, "r")).body).toBe(full);
  });

  it("exact under 50 concurrent checkouts", async () => {
    // 50 machines active on 50 slots; 40 machines gone earlier still hold certificates: of the
    // 50 + 1 places, 11 are left.
    const licenseKey = await f.createLicense({ maxMachines: 50 });
    const machines = Array.from({ length: 50 }, (_, i) => `race-${i}`);
    for (const machine of machines)
      expect((await activate(licenseKey, machine)).statusCode).toBe(200);
    const licenseId = await licenseIdOf(licenseKey);
    const now = Date.now();
    await f.db
      .insertInto("license_certificates")
      .values(
        Array.from({ length: 40 }, (_, i) => ({
          license_id: licenseId,
          machine_id: `gone-${i}`,
          issued_at: now,
          expires_at: now + 7 * day,
        })),
      )
      .execute();
    const answers = await Promise.all(machines.map((machine) => checkout(licenseKey, machine)));
    const statuses = answers.map((a) => a.statusCode);
    expect(statuses.filter((s) => s === 200)).toHaveLength(11);
    for (const answer of answers.filter((a) => a.statusCode !== 200)) {
      expect(answer.body).toBe(refusal);
    }
    expect(await holders(licenseKey)).toHaveLength(51);
  });

  it("the allowance is set through the admin API (0 to 100, audited), the CLI and the dashboard", async () => {
    const patch = (value: unknown) =>
      callWithApiKey(f, apiKey, "PATCH", `/api/admin/products/${f.otherProduct.slug}`, {
        offlineAllowance: value,
      });
    for (const bad of [-1, 101, 1.5, "2", null]) {
      expect((await patch(bad)).statusCode).toBe(400);
    }
    const saved = await patch(0);
    expect(saved.json()).toMatchObject({ offlineAllowance: 0, offlinePeriodSeconds: 604800 });
    expect((await patch(100)).json()).toMatchObject({ offlineAllowance: 100 });
    const audit = await f.db
      .selectFrom("audit_log")
      .select(["action", "details"])
      .where("action", "=", "product.offline_allowance")
      .where("target_id", "=", f.otherProduct.slug)
      .orderBy("at")
      .execute();
    expect(audit.map((e) => JSON.parse(String(e.details)))).toEqual([
      { offlineAllowance: 0 },
      { offlineAllowance: 100 },
    ]);

    const cli = commands["products set-offline-allowance"];
    const ran = await cli?.run(f.db, [f.otherProduct.slug], { machines: "3" }, commandContext());
    expect(ran?.data).toMatchObject({ offlineAllowance: 3 });
    await expect(
      cli?.run(f.db, [f.otherProduct.slug], { machines: "101" }, commandContext()),
    ).rejects.toThrow("offlineAllowance must be a whole number from 0 to 100");

    const form = (fields: Record<string, string>) =>
      f.app.inject({
        method: "POST",
        url: `/admin/products/${f.otherProduct.slug}/keys/offline-allowance`,
        headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString(),
      });
    expect((await form({ offlineAllowance: "abc" })).statusCode).toBe(400);
    const allowed = await form({ offlineAllowance: "2" });
    expect(allowed.statusCode).toBe(303);
    const page = await f.app.inject({
      url: `/admin/products/${f.otherProduct.slug}/keys`,
      headers: { cookie: cookieAfter(cookie, allowed) },
    });
    expect(page.body).toContain("Offline allowance saved.");
    expect(page.body).toMatch(/name="offlineAllowance"[^>]*value="2"/);
  });

  it("the same attack through a proxy: SDK instances on different machines, at most maxMachines + allowance run", async () => {
    await f.app.listen({ port: 0, host: "127.0.0.1" });
    const server = `http://127.0.0.1:${(f.app.server.address() as AddressInfo).port}`;
    const licenseKey = await f.createLicense({ maxMachines: 1 });
    const send = (path: string, payload: unknown) =>
      fetch(`${server}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(payload),
      });
    // Around every request of the app, the proxy activates its machine first and deactivates it
    // afterwards, so the one slot is always free for the next machine.
    const proxy = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        void (async () => {
          const raw = Buffer.concat(chunks);
          const input =
            raw.length > 0 ? (JSON.parse(raw.toString()) as Record<string, string>) : {};
          const around = request.method === "POST" && input.machineId !== undefined;
          if (around && !request.url?.endsWith("/activate")) {
            await send("/api/license/activate", { ...input, productSlug: slug() });
          }
          const headers = new Headers();
          for (const [name, value] of Object.entries(request.headers)) {
            if (typeof value === "string" && name !== "host") headers.set(name, value);
          }
          const answer = await fetch(`${server}${request.url ?? "/"}`, {
            method: request.method,
            headers,
            ...(request.method === "POST" ? { body: raw } : {}),
          });
          const answerBody = Buffer.from(await answer.arrayBuffer());
          if (around) {
            await send("/api/license/deactivate", {
              licenseKey: input.licenseKey,
              machineId: input.machineId,
            });
          }
          const outHeaders: Record<string, string> = {};
          answer.headers.forEach((value, name) => {
            if (!["content-length", "transfer-encoding", "connection"].includes(name)) {
              outHeaders[name] = value;
            }
          });
          response.writeHead(answer.status, outHeaders).end(answerBody);
        })().catch((error: unknown) => response.destroy(error as Error));
      });
    });
    proxy.listen(0, "127.0.0.1");
    await once(proxy, "listening");
    try {
      const proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const outcomes: string[] = [];
      const clients: ShipkeyClient[] = [];
      for (let i = 0; i < 5; i++) {
        const client = new ShipkeyClient({
          server: proxied,
          productSlug: slug(),
          jwksUrl: `${server}/api/products/${slug()}/keys`,
          storage: new MemoryStorage(),
          machineId: `sdk-machine-${i}`,
          retry: { attempts: 1 },
        });
        clients.push(client);
        outcomes.push(
          await client
            .activate(licenseKey)
            .then(() => client.checkout())
            .then(
              () => "certificate",
              (error: unknown) => (error instanceof ShipkeyError ? error.code : String(error)),
            ),
        );
      }
      expect(outcomes).toEqual([
        "certificate",
        "certificate",
        "MAX_MACHINES_REACHED",
        "MAX_MACHINES_REACHED",
        "MAX_MACHINES_REACHED",
      ]);
      const stored = await Promise.all(clients.map((c) => c.stored()));
      expect(stored.filter((s) => s?.certificateExpiresAt !== undefined)).toHaveLength(2);
      expect(await holders(licenseKey)).toEqual(["sdk-machine-0", "sdk-machine-1"]);
    } finally {
      proxy.close();
      await once(proxy, "close");
    }
  });
});
