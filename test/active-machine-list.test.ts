import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dialects } from "./helpers/database.js";
import { createFixture, type Fixture } from "./helpers/fixture.js";
import { activeMachineListMismatches, keepsActiveMachineList } from "./helpers/machines.js";

// On SQLite, validate answers "is this machine active?" from the license row's list of active
// machines (migration 0006) where the row keeps one, else from the activation index. Both must
// give the answer the activations give, for any machine id, however the activations were written.
describe.each(dialects)("validate with the license's list of active machines (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => {
    await f.close();
  });

  const body = (licenseKey: string, machineId: string) => ({
    licenseKey,
    machineId,
    productSlug: f.product.slug,
  });
  const validate = async (licenseKey: string, machineId: string) => {
    const response = await f.post("/api/license/validate", body(licenseKey, machineId));
    return response.statusCode === 200 ? "valid" : String(response.json().code);
  };
  const activate = async (licenseKey: string, machineId: string) =>
    (await f.post("/api/license/activate", body(licenseKey, machineId))).statusCode;
  const deactivate = async (licenseKey: string, machineId: string) =>
    (await f.post("/api/license/deactivate", { licenseKey, machineId })).statusCode;

  it("activates, validates and deactivates machine ids that JSON must escape", async () => {
    const machineIds = [
      'q"uote',
      "back\\slash",
      "comma,[bracket]{brace}",
      "control\u0001\t\nchars",
      "ключ 🎉",
      "lone \ud800 surrogate",
      " ",
    ];
    const licenseKey = await f.createLicense({ maxMachines: machineIds.length });
    for (const machineId of machineIds) expect(await activate(licenseKey, machineId)).toBe(200);
    if (dialect === "sqlite") expect(await keepsActiveMachineList(f.db, licenseKey)).toBe(true);
    for (const machineId of machineIds) expect(await validate(licenseKey, machineId)).toBe("valid");
    // Near misses are not active.
    expect(await validate(licenseKey, "q")).toBe("MACHINE_NOT_ACTIVATED");
    expect(await validate(licenseKey, '"q\\"uote"')).toBe("MACHINE_NOT_ACTIVATED");
    expect(await validate(licenseKey, ",")).toBe("MACHINE_NOT_ACTIVATED");
    for (const machineId of machineIds.slice(0, 3)) {
      expect(await deactivate(licenseKey, machineId)).toBe(200);
      expect(await validate(licenseKey, machineId)).toBe("MACHINE_NOT_ACTIVATED");
    }
    for (const machineId of machineIds.slice(3)) {
      expect(await validate(licenseKey, machineId)).toBe("valid");
    }
    expect(await activeMachineListMismatches(f.db, dialect)).toEqual([]);
  });

  it("a license with more machines than its row keeps answers from the index, correctly", async () => {
    const machineIds = Array.from({ length: 15 }, (_, i) => `${"f".repeat(62)}${i}`.slice(-64));
    const licenseKey = await f.createLicense({ maxMachines: 20 });
    for (const machineId of machineIds) expect(await activate(licenseKey, machineId)).toBe(200);
    if (dialect === "sqlite") expect(await keepsActiveMachineList(f.db, licenseKey)).toBe(false);
    for (const machineId of machineIds) expect(await validate(licenseKey, machineId)).toBe("valid");
    for (const machineId of machineIds.slice(0, 5)) {
      expect(await deactivate(licenseKey, machineId)).toBe(200);
    }
    for (const [i, machineId] of machineIds.entries()) {
      expect(await validate(licenseKey, machineId)).toBe(i < 5 ? "MACHINE_NOT_ACTIVATED" : "valid");
    }
  });

  it.runIf(dialect === "sqlite")(
    "activations written outside the service keep the list true (triggers)",
    async () => {
      const licenseKey = await f.createLicense({ maxMachines: 5 });
      const { id: licenseId } = await f.db
        .selectFrom("licenses")
        .select("id")
        .where("license_key", "=", licenseKey)
        .executeTakeFirstOrThrow();
      const insert = (id: string, machineId: string) =>
        sql`insert into activations (id, license_id, machine_id, activated_at, last_seen_at)
          values (${id}, ${licenseId}, ${machineId}, 0, 0)`.execute(f.db);

      // An activation that starts joins the list; one that ends leaves it.
      await insert("act_sql_1", "imported-1");
      await insert("act_sql_2", "imported-2");
      expect(await validate(licenseKey, "imported-1")).toBe("valid");
      await sql`update activations set deactivated_at = 1 where id = 'act_sql_1'`.execute(f.db);
      expect(await validate(licenseKey, "imported-1")).toBe("MACHINE_NOT_ACTIVATED");
      expect(await keepsActiveMachineList(f.db, licenseKey)).toBe(true);
      expect(await activeMachineListMismatches(f.db, dialect)).toEqual([]);

      // Anything else (a restart, a rename, a delete) hands the license to the index for good.
      await sql`update activations set deactivated_at = null where id = 'act_sql_1'`.execute(f.db);
      expect(await keepsActiveMachineList(f.db, licenseKey)).toBe(false);
      expect(await validate(licenseKey, "imported-1")).toBe("valid");
      await sql`update activations set machine_id = 'renamed' where id = 'act_sql_2'`.execute(f.db);
      expect(await validate(licenseKey, "imported-2")).toBe("MACHINE_NOT_ACTIVATED");
      expect(await validate(licenseKey, "renamed")).toBe("valid");
      await sql`delete from activations where id = 'act_sql_1'`.execute(f.db);
      expect(await validate(licenseKey, "imported-1")).toBe("MACHINE_NOT_ACTIVATED");

      // Where the row keeps a list, validate believes it (this is what spares it the index):
      // a list emptied by hand makes an active machine inactive.
      const trusted = await f.createLicense();
      expect(await activate(trusted, "m-trusted")).toBe(200);
      await sql`update licenses set active_machine_ids = '[]'
        where license_key = ${trusted}`.execute(f.db);
      expect(await validate(trusted, "m-trusted")).toBe("MACHINE_NOT_ACTIVATED");

      // A delete on another license with a kept list: that one goes to the index too.
      const other = await f.createLicense();
      expect(await activate(other, "m-1")).toBe(200);
      await sql`delete from activations where machine_id = 'm-1'`.execute(f.db);
      expect(await keepsActiveMachineList(f.db, other)).toBe(false);
      expect(await validate(other, "m-1")).toBe("MACHINE_NOT_ACTIVATED");
    },
  );
});
