import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commands } from "../../src/cli/commands.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { commandContext } from "../helpers/cli.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

const full = '{"error":"Maximum machines reached","code":"MAX_MACHINES_REACHED","success":false}';

describe.each(dialects)(
  "offline places: a seat runs on at most maxMachines + allowance machines (%s)",
  (dialect) => {
    let f: Fixture;
    let apiKey: string;
    let cookie: string;
    let csrf: string;
    beforeAll(async () => {
      f = await createFixture(dialect);
      ({ apiKey, cookie, csrf } = await adminAccess(f, "places@example.com"));
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
    const validate = (licenseKey: string, machineId: string) =>
      f.post("/api/license/validate", body(licenseKey, machineId));
    const checkout = (licenseKey: string, machineId: string) =>
      f.post("/api/license/checkout", body(licenseKey, machineId));
    const deactivate = (licenseKey: string, machineId: string) =>
      f.post("/api/license/deactivate", { licenseKey, machineId });
    const setAllowance = async (offlineAllowance: number) => {
      const answer = await callWithApiKey(f, apiKey, "PATCH", `/api/admin/products/${slug()}`, {
        offlineAllowance,
      });
      expect(answer.statusCode).toBe(200);
    };
    const withAllowance = async (allowance: number, run: () => Promise<void>) => {
      await setAllowance(allowance);
      try {
        await run();
      } finally {
        await setAllowance(1);
      }
    };
    const show = async (licenseKey: string) => {
      const answer = await callWithApiKey(f, apiKey, "GET", `/api/admin/licenses/${licenseKey}`);
      expect(answer.statusCode).toBe(200);
      return answer.json<{
        activeMachines: number;
        offlineAllowance: number;
        offlinePlaces: Array<{ machineId: string; machineName: string | null; endsAt: string }>;
      }>();
    };
    const expireCertificate = async (licenseKey: string, machineId: string) => {
      const { id } = await f.db
        .selectFrom("licenses")
        .select("id")
        .where("license_key", "=", licenseKey)
        .executeTakeFirstOrThrow();
      await f.db
        .updateTable("license_certificates")
        .set({ expires_at: Date.now() - 1000 })
        .where("license_id", "=", id)
        .where("machine_id", "=", machineId)
        .execute();
    };

    it("the review's cycle with offlineAllowance 0: the moved seat waits for the certificate", async () => {
      await withAllowance(0, async () => {
        const licenseKey = await f.createLicense({ maxMachines: 1 });
        expect((await activate(licenseKey, "old-laptop")).statusCode).toBe(200);
        expect((await checkout(licenseKey, "old-laptop")).statusCode).toBe(200);
        expect((await deactivate(licenseKey, "old-laptop")).statusCode).toBe(200);
        expect((await activate(licenseKey, "new-laptop")).body).toBe(full);
        expect((await validate(licenseKey, "new-laptop")).json()).toMatchObject({
          code: "MACHINE_NOT_ACTIVATED",
          canActivate: false,
        });
        await expireCertificate(licenseKey, "old-laptop");
        expect((await validate(licenseKey, "new-laptop")).json()).toMatchObject({
          canActivate: true,
        });
        expect((await activate(licenseKey, "new-laptop")).statusCode).toBe(200);
      });
    });

    it("the review's cycle with the default allowance: two machines run, never three", async () => {
      const licenseKey = await f.createLicense({ maxMachines: 1 });
      for (const machine of ["a", "b"]) {
        expect((await activate(licenseKey, machine)).statusCode).toBe(200);
        expect((await checkout(licenseKey, machine)).statusCode).toBe(200);
        expect((await deactivate(licenseKey, machine)).statusCode).toBe(200);
      }
      expect((await activate(licenseKey, "c")).body).toBe(full);
      // A machine running offline comes back online in its own place.
      expect((await activate(licenseKey, "a")).statusCode).toBe(200);
      expect((await activate(licenseKey, "c")).body).toBe(full);
      const license = await show(licenseKey);
      expect(license.activeMachines).toBe(1);
      expect(license.offlinePlaces.map((p) => p.machineId)).toEqual(["b"]);
    });

    it("a machine holding its own offline place may activate again, and validate says so", async () => {
      await withAllowance(0, async () => {
        const licenseKey = await f.createLicense({ maxMachines: 2 });
        for (const machine of ["a", "b"]) {
          await activate(licenseKey, machine);
          expect((await checkout(licenseKey, machine)).statusCode).toBe(200);
        }
        const reset = await callWithApiKey(
          f,
          apiKey,
          "POST",
          `/api/admin/licenses/${licenseKey}/reset-machines`,
        );
        expect(reset.statusCode).toBe(200);
        // Both run offline and fill the license; each may take its own place back, no one else.
        expect((await validate(licenseKey, "a")).json()).toMatchObject({ canActivate: true });
        expect((await validate(licenseKey, "c")).json()).toMatchObject({ canActivate: false });
        expect((await activate(licenseKey, "c")).body).toBe(full);
        expect((await activate(licenseKey, "a")).statusCode).toBe(200);
        expect((await activate(licenseKey, "b")).statusCode).toBe(200);
      });
    });

    it("clients that never check out see exactly the spec's behaviour", async () => {
      const licenseKey = await f.createLicense({ maxMachines: 2 });
      for (let i = 0; i < 10; i++) {
        const machine = `online-${i}`;
        expect((await activate(licenseKey, machine)).json()).toMatchObject({
          message: "Machine activated",
          activeMachines: i === 0 ? 1 : 2,
          maxMachines: 2,
        });
        if (i > 0) expect((await deactivate(licenseKey, `online-${i - 1}`)).statusCode).toBe(200);
      }
      expect((await activate(licenseKey, "third")).statusCode).toBe(200);
      expect((await activate(licenseKey, "fourth")).body).toBe(full);
      expect((await validate(licenseKey, "fourth")).json()).toMatchObject({ canActivate: false });
      expect((await show(licenseKey)).offlinePlaces).toEqual([]);
    });

    it("whatever the order, the machines that can run never exceed maxMachines + allowance", async () => {
      // A client's-eye model: a machine runs while the server says it is active, or while it holds
      // a certificate the server issued that has not expired.
      const licenseKey = await f.createLicense({ maxMachines: 2 });
      const machines = Array.from({ length: 6 }, (_, i) => `m-${i}`);
      const active = new Set<string>();
      const certificateUntil = new Map<string, number>();
      let seed = 42;
      const random = (n: number) => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed % n;
      };
      let refused = 0;
      for (let step = 0; step < 150; step++) {
        const machine = machines[random(machines.length)] ?? "m-0";
        const operation = random(3);
        if (operation === 0) {
          const answer = await activate(licenseKey, machine);
          if (answer.statusCode === 200) active.add(machine);
          else refused++;
        } else if (operation === 1) {
          const answer = await checkout(licenseKey, machine);
          if (answer.statusCode === 200) {
            const until = Date.parse(answer.json<{ expiresAt: string }>().expiresAt);
            certificateUntil.set(machine, Math.max(until, certificateUntil.get(machine) ?? 0));
          }
        } else if ((await deactivate(licenseKey, machine)).statusCode === 200) {
          active.delete(machine);
        }
        const now = Date.now();
        const running = machines.filter(
          (m) => active.has(m) || (certificateUntil.get(m) ?? 0) > now,
        );
        expect(running.length).toBeLessThanOrEqual(3);
        const license = await show(licenseKey);
        expect(license.activeMachines + license.offlinePlaces.length).toBe(running.length);
      }
      expect(refused).toBeGreaterThan(0);
    });

    it("exact under a race of 50 activations, checkouts and deactivations", async () => {
      // 10 slots + 1, all 10 taken. Each of the 10 machines checks out and deactivates while 40
      // new machines try to activate: only the one place the allowance leaves can be taken.
      const licenseKey = await f.createLicense({ maxMachines: 10 });
      const originals = Array.from({ length: 10 }, (_, i) => `orig-${i}`);
      for (const machine of originals) {
        expect((await activate(licenseKey, machine)).statusCode).toBe(200);
      }
      const moves = originals.map(async (machine) => {
        expect((await checkout(licenseKey, machine)).statusCode).toBe(200);
        expect((await deactivate(licenseKey, machine)).statusCode).toBe(200);
      });
      const newcomers = Array.from({ length: 40 }, (_, i) => activate(licenseKey, `new-${i}`));
      const [, answers] = await Promise.all([Promise.all(moves), Promise.all(newcomers)]);
      const activated = answers.filter((a) => a.statusCode === 200);
      expect(activated.length).toBeLessThanOrEqual(1);
      for (const answer of answers.filter((a) => a.statusCode !== 200)) {
        expect(answer.body).toBe(full);
      }
      const license = await show(licenseKey);
      expect(license.offlinePlaces).toHaveLength(10);
      expect(license.activeMachines).toBe(activated.length);
      expect(license.activeMachines + license.offlinePlaces.length).toBeLessThanOrEqual(11);
      // Once every original is offline, the last place is taken by exactly one of many.
      const last = await Promise.all(
        Array.from({ length: 20 }, (_, i) => activate(licenseKey, `late-${i}`)),
      );
      expect(last.filter((a) => a.statusCode === 200)).toHaveLength(1 - activated.length);
    });

    it("the admin API lists the places and ends one early, audited; the CLI and the dashboard too", async () => {
      await withAllowance(0, async () => {
        const licenseKey = await f.createLicense({ maxMachines: 1 });
        await f.post("/api/license/activate", {
          ...body(licenseKey, "stolen"),
          machineName: "Stolen laptop",
        });
        const issued = await checkout(licenseKey, "stolen");
        await deactivate(licenseKey, "stolen");
        const license = await show(licenseKey);
        expect(license.offlineAllowance).toBe(0);
        expect(license.offlinePlaces).toEqual([
          {
            machineId: "stolen",
            machineName: "Stolen laptop",
            platform: null,
            deactivatedAt: expect.any(String),
            certificateIssuedAt: expect.any(String),
            endsAt: issued.json<{ expiresAt: string }>().expiresAt,
          },
        ]);
        expect((await activate(licenseKey, "replacement")).body).toBe(full);

        const url = `/api/admin/licenses/${licenseKey}/offline-places/stolen`;
        const readOnly = await callWithApiKey(f, f.readOnlyKey, "DELETE", url);
        expect(readOnly.statusCode).toBe(403);
        const ended = await callWithApiKey(f, apiKey, "DELETE", url);
        expect(ended.json()).toEqual({
          ended: true,
          licenseKey,
          machineId: "stolen",
          endsAt: issued.json<{ expiresAt: string }>().expiresAt,
        });
        expect((await callWithApiKey(f, apiKey, "DELETE", url)).json()).toMatchObject({
          code: "OFFLINE_PLACE_NOT_FOUND",
        });
        const entry = await f.db
          .selectFrom("audit_log")
          .select(["details", "target_type"])
          .where("action", "=", "license.end_offline_place")
          .executeTakeFirstOrThrow();
        expect(entry.target_type).toBe("license");
        expect(JSON.parse(String(entry.details))).toMatchObject({ machineId: "stolen" });
        expect(String(entry.details)).not.toContain(licenseKey);
        expect((await activate(licenseKey, "replacement")).statusCode).toBe(200);
        // An active machine holds no offline place.
        await checkout(licenseKey, "replacement");
        expect(
          (
            await callWithApiKey(
              f,
              apiKey,
              "DELETE",
              `/api/admin/licenses/${licenseKey}/offline-places/replacement`,
            )
          ).statusCode,
        ).toBe(404);

        // The CLI and the dashboard end the replacement's place once it is deactivated.
        await deactivate(licenseKey, "replacement");
        const shown = await commands["licenses show"]?.run(
          f.db,
          [licenseKey],
          {},
          commandContext(),
        );
        expect(shown?.text).toMatch(/Offline places[^\n]*\n[^\n]*\n[^\n]*replacement/);
        const cli = await commands["licenses end-offline-place"]?.run(
          f.db,
          [licenseKey],
          { machine: "replacement" },
          commandContext(),
        );
        expect(cli?.data).toMatchObject({ ended: true, machineId: "replacement" });

        await activate(licenseKey, "third");
        await checkout(licenseKey, "third");
        await deactivate(licenseKey, "third");
        const page = await f.app.inject({
          url: `/admin/licenses/${licenseKey}`,
          headers: { cookie },
        });
        expect(page.body).toContain("Machines running: 1 of 1");
        expect(page.body).toContain(`/offline-places/third/end`);
        const form = await f.app.inject({
          method: "POST",
          url: `/admin/licenses/${licenseKey}/offline-places/third/end`,
          headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
          payload: new URLSearchParams({ _csrf: csrf }).toString(),
        });
        expect(form.statusCode).toBe(303);
        expect((await show(licenseKey)).offlinePlaces).toEqual([]);
      });
    });
  },
);
