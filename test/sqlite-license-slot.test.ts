import BetterSqlite3 from "better-sqlite3";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../src/db/database.js";
import { migrateTo, migrateToLatest } from "../src/db/migrate.js";
import { licenseSlot } from "../src/db/sqlite-license-slot.js";
import { createTestDatabase, type TestDatabase } from "./helpers/database.js";
import { createFixture, type Fixture } from "./helpers/fixture.js";

// The slot is a shortcut on SQLite only (src/db/sqlite-license-slot.ts): these tests prove that
// rows go to it and that every license endpoint still answers right when a row is not in it.

const rowidOf = async (f: Fixture, licenseKey: string) => {
  const result = await sql<{
    rowid: number;
  }>`select rowid from licenses where license_key = ${licenseKey}`.execute(f.db);
  return result.rows[0]?.rowid;
};

describe("licenseSlot", () => {
  it("is a fixed 53-bit hash of the key: changing it would move every slot (file format)", () => {
    expect(licenseSlot("ABCDE-FGHJK-MNPQR-STVWX-YZ012")).toBe(3_676_140_514_466_401);
    expect(licenseSlot("")).toBe(3_338_908_027_751_811);
    for (const key of ["a", "KEY-1", "x".repeat(255), "\u{1F511}"]) {
      const slot = licenseSlot(key);
      expect(Number.isSafeInteger(slot) && slot >= 0 && slot < 2 ** 53).toBe(true);
    }
    expect(licenseSlot("KEY-1")).not.toBe(licenseSlot("KEY-2"));
  });
});

describe("license slots (sqlite)", () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture("sqlite");
  });
  afterAll(async () => {
    await f.close();
  });

  const activate = (licenseKey: string, machineId: string) =>
    f.post("/api/license/activate", { licenseKey, machineId, productSlug: f.product.slug });
  const validate = (licenseKey: string, machineId: string) =>
    f.post("/api/license/validate", { licenseKey, machineId, productSlug: f.product.slug });
  const deactivate = (licenseKey: string, machineId: string) =>
    f.post("/api/license/deactivate", { licenseKey, machineId });

  /** Activate, validate and deactivate all answer for this license's own row. */
  const expectEndpointsServe = async (licenseKey: string, maxMachines: number) => {
    expect((await activate(licenseKey, "m-1")).statusCode).toBe(200);
    const validated = await validate(licenseKey, "m-1");
    expect(validated.statusCode).toBe(200);
    expect(validated.json()).toMatchObject({ valid: true, maxMachines, activeMachines: 1 });
    expect((await validate(licenseKey, "m-other")).statusCode).toBe(403);
    expect((await deactivate(licenseKey, "m-1")).statusCode).toBe(200);
    expect((await validate(licenseKey, "m-1")).statusCode).toBe(403);
  };

  it("a new license is stored at its key's slot", async () => {
    const key = await f.createLicense();
    expect(await rowidOf(f, key)).toBe(licenseSlot(key));
    await expectEndpointsServe(key, 3);
  });

  it("a license moved out of its slot is still found by every endpoint", async () => {
    const key = await f.createLicense({ maxMachines: 4 });
    await sql`update licenses set rowid = 7 where license_key = ${key}`.execute(f.db);
    await expectEndpointsServe(key, 4);
  });

  it("a key whose slot another license holds gets another rowid, and each key finds its own row", async () => {
    const holder = await f.createLicense({ maxMachines: 5 });
    const wanted = "SLOT-TAKEN-KEY-1";
    // As if the two keys' hashes collided: the holder sits in the wanted key's slot.
    await sql`update licenses set rowid = ${licenseSlot(wanted)} where license_key = ${holder}`.execute(
      f.db,
    );
    await f.createLicense({ licenseKey: wanted, maxMachines: 6 });
    expect(await rowidOf(f, wanted)).not.toBe(licenseSlot(wanted));
    await expectEndpointsServe(wanted, 6);
    await expectEndpointsServe(holder, 5);
  });

  it("a key that matches no license is 404, also when its slot holds another license", async () => {
    const holder = await f.createLicense();
    await sql`update licenses set rowid = ${licenseSlot("NO-SUCH-KEY")} where license_key = ${holder}`.execute(
      f.db,
    );
    const response = await validate("NO-SUCH-KEY", "m-1");
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({
      valid: false,
      error: "Invalid license key",
      code: "LICENSE_NOT_FOUND",
    });
  });

  it("VACUUM keeps every license in its slot", async () => {
    const key = await f.createLicense();
    await sql`vacuum`.execute(f.db);
    expect(await rowidOf(f, key)).toBe(licenseSlot(key));
  });
});

describe("the lookup's statement shape (sqlite)", () => {
  // The read is `<by slot> UNION ALL <by key index> LIMIT 1`: it only saves a search if SQLite
  // stops at the first row without starting the second SELECT. A function with a side effect in
  // the second SELECT shows whether it ran.
  it("UNION ALL with LIMIT 1 does not run the second SELECT once the first gave a row", () => {
    const db = new BetterSqlite3(":memory:");
    let secondRan = 0;
    db.function("second_ran", () => ++secondRan);
    db.exec("create table t (k text); insert into t values ('a'), ('b')");
    const query = db.prepare(
      "select k from t where k = ? union all select k from t where second_ran() > 0 and k = ? limit 1",
    );
    expect(query.all("a", "a")).toEqual([{ k: "a" }]);
    expect(secondRan).toBe(0);
    expect(query.all("zzz", "b")).toEqual([{ k: "b" }]);
    expect(secondRan).toBeGreaterThan(0);
    db.close();
  });
});

describe("migration 0008 (sqlite)", () => {
  let testDatabase: TestDatabase;
  let database: Database;
  beforeAll(async () => {
    testDatabase = await createTestDatabase("sqlite");
    database = await openDatabase(testDatabase.url);
  });
  afterAll(async () => {
    await database.close();
    await testDatabase.drop();
  });

  it("moves existing licenses to their slots; one whose slot is taken stays and is found", async () => {
    const db = database.db;
    await migrateTo(db, "0007_last_seen_log_file");
    await sql`insert into products (id, slug, name, created_at) values ('prd_1', 'app', 'App', 0)`.execute(
      db,
    );
    const insert = (rowid: number, id: string, key: string) =>
      sql`insert into licenses (rowid, id, license_key, product_id, status, features,
        max_machines, active_machines, created_at, updated_at)
        values (${rowid}, ${id}, ${key}, 'prd_1', 'ACTIVE', '[]', 2, 0, 0, 0)`.execute(db);
    await insert(1, "lic_1", "KEY-1");
    await insert(2, "lic_2", "KEY-2");
    // KEY-3's slot is held by a row whose own key hashes elsewhere (a collision, in effect).
    await insert(licenseSlot("KEY-3"), "lic_x", "KEY-X");
    await insert(4, "lic_3", "KEY-3");

    await migrateToLatest(db);

    const rows = await sql<{
      rowid: number;
      license_key: string;
    }>`select rowid, license_key from licenses order by license_key`.execute(db);
    expect(rows.rows).toEqual([
      { rowid: licenseSlot("KEY-1"), license_key: "KEY-1" },
      { rowid: licenseSlot("KEY-2"), license_key: "KEY-2" },
      { rowid: 4, license_key: "KEY-3" },
      { rowid: licenseSlot("KEY-X"), license_key: "KEY-X" },
    ]);
  });
});
