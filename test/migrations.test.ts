import { type Kysely, sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { migrateTo, migrateToLatest } from "../src/db/migrate.js";
import * as activeMachineList from "../src/db/migrations/0006_active_machine_list.js";
import { type Database, openDatabase } from "../src/db/database.js";
import { createTestDatabase, dialects, type TestDatabase } from "./helpers/database.js";

describe.each(dialects)("migrations (%s)", (dialect) => {
  let opened: { database: Database; testDatabase: TestDatabase } | undefined;
  afterEach(async () => {
    await opened?.database.close();
    await opened?.testDatabase.drop();
    opened = undefined;
  });

  /** A fresh database at migration `version`, with one product (`prd_1`); closed after the test. */
  const openAt = async (version: string) => {
    const testDatabase = await createTestDatabase(dialect);
    const database = await openDatabase(testDatabase.url);
    opened = { database, testDatabase };
    const db = database.db;
    await migrateTo(db, version);
    await sql`insert into products (id, slug, name, created_at) values ('prd_1', 'app', 'App', 0)`.execute(
      db,
    );
    return db;
  };

  // 0005 replaces the last-seen log keyed by activation id with one keyed by machine; a server of
  // the previous version may have left sightings in the old log when it stopped.
  it("0005 applies what the previous last-seen log held, then drops it", async () => {
    const db = await openAt("0004_activation_sightings");
    await sql`insert into licenses (id, license_key, product_id, status, features, max_machines,
      active_machines, created_at, updated_at)
      values ('lic_1', 'KEY-1', 'prd_1', 'ACTIVE', '[]', 3, 2, 0, 0)`.execute(db);
    await sql`insert into activations (id, license_id, machine_id, activated_at, last_seen_at)
      values ('act_1', 'lic_1', 'm-1', 0, 1000), ('act_2', 'lic_1', 'm-2', 0, 9000)`.execute(db);
    await sql`insert into activation_sightings (activation_id, seen_at)
      values ('act_1', 5000), ('act_1', 7000), ('act_2', 8000), ('act_gone', 9999)`.execute(db);

    await migrateToLatest(db);

    const times = await db
      .selectFrom("activations")
      .select(["id", "last_seen_at"])
      .orderBy("id")
      .execute();
    // The latest sighting wins; a time never moves back.
    expect(times).toEqual([
      { id: "act_1", last_seen_at: 7000 },
      { id: "act_2", last_seen_at: 9000 },
    ]);
    await expect(sql`select count(*) from activation_sightings`.execute(db)).rejects.toThrow();
    const left = await db
      .selectFrom("machine_sightings")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .executeTakeFirstOrThrow();
    expect(Number(left.n)).toBe(0);

    // Down again: pending sightings go back to the old log, by the machine's active activation.
    await db
      .insertInto("machine_sightings")
      .values({ license_id: "lic_1", machine_id: "m-2", seen_at: 12_000 })
      .execute();
    await migrateTo(db, "0004_activation_sightings");
    const back = await sql<{
      activation_id: string;
      seen_at: number | string;
    }>`select activation_id, seen_at from activation_sightings`.execute(db);
    expect(back.rows.map((r) => [r.activation_id, Number(r.seen_at)])).toEqual([["act_2", 12_000]]);
  });

  // 0006 (SQLite) gives each license row the list of its active machines, from the activations
  // already there; down() removes the list and its triggers.
  it("0006 fills each license's list of active machines from its activations", async () => {
    const db = await openAt("0005_machine_sightings");
    for (const id of ["lic_none", "lic_two", "lic_many"]) {
      await sql`insert into licenses (id, license_key, product_id, status, features, max_machines,
        active_machines, created_at, updated_at)
        values (${id}, ${`KEY-${id}`}, 'prd_1', 'ACTIVE', '[]', 20, 0, 0, 0)`.execute(db);
    }
    await sql`insert into activations (id, license_id, machine_id, activated_at, last_seen_at,
      deactivated_at)
      values ('act_1', 'lic_two', 'm-1', 0, 0, null), ('act_2', 'lic_two', 'm "2"', 0, 0, null),
             ('act_3', 'lic_two', 'm-gone', 0, 0, 5)`.execute(db);
    for (let i = 0; i < 12; i++) {
      await sql`insert into activations (id, license_id, machine_id, activated_at, last_seen_at)
        values (${`act_many_${i}`}, 'lic_many', ${`${"a".repeat(60)}${i}`}, 0, 0)`.execute(db);
    }

    await migrateToLatest(db);

    const lists = async () =>
      Object.fromEntries(
        (
          await sql<{ id: string; list: string | null }>`select id, active_machine_ids as list
            from licenses order by id`.execute(db)
        ).rows.map((row) => [
          row.id,
          row.list === null ? null : (JSON.parse(row.list) as string[]).sort(),
        ]),
      );
    if (dialect === "sqlite") {
      // Too many machines for the row: NULL, the index answers.
      expect(await lists()).toEqual({ lic_many: null, lic_none: [], lic_two: ['m "2"', "m-1"] });
      // Run again (as after a crash before Kysely recorded it): nothing changes.
      await activeMachineList.up(db as Kysely<unknown>);
      expect(await lists()).toEqual({ lic_many: null, lic_none: [], lic_two: ['m "2"', "m-1"] });
      // The triggers keep a backfilled list true; a license row written again loses its list.
      await sql`update activations set deactivated_at = 9 where id = 'act_1'`.execute(db);
      await sql`insert or replace into licenses (id, license_key, product_id, status, features,
        max_machines, active_machines, created_at, updated_at)
        values ('lic_many', 'KEY-lic_many', 'prd_1', 'ACTIVE', '[]', 20, 12, 0, 0)`.execute(db);
      await sql`insert or replace into licenses (id, license_key, product_id, status, features,
        max_machines, active_machines, created_at, updated_at)
        values ('lic_none', 'KEY-lic_none', 'prd_1', 'ACTIVE', '[]', 20, 0, 0, 0)`.execute(db);
      expect(await lists()).toEqual({ lic_many: null, lic_none: [], lic_two: ['m "2"'] });
      await sql`insert or replace into licenses (id, license_key, product_id, status, features,
        max_machines, active_machines, created_at, updated_at)
        values ('lic_two', 'KEY-lic_two', 'prd_1', 'ACTIVE', '[]', 20, 1, 0, 0)`.execute(db);
      expect(await lists()).toEqual({ lic_many: null, lic_none: [], lic_two: null });
      await migrateTo(db, "0005_machine_sightings");
      await expect(lists()).rejects.toThrow(/active_machine_ids/);
      const triggers = await sql`select name from sqlite_master where type = 'trigger'`.execute(db);
      expect(triggers.rows).toEqual([]);
    } else {
      // PostgreSQL keeps no list.
      await expect(lists()).rejects.toThrow(/active_machine_ids/);
    }
  });
});
