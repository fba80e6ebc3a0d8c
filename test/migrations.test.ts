import { type Kysely, sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { migrateTo, migrateToLatest } from "../src/db/migrate.js";
import * as licensesByKey from "../src/db/migrations/0006_licenses_by_key.js";
import { type Database, openDatabase } from "../src/db/database.js";
import { createTestDatabase, dialects, type TestDatabase } from "./helpers/database.js";

describe.each(dialects)("migrations (%s)", (dialect) => {
  let opened: { database: Database; testDatabase: TestDatabase } | undefined;
  afterEach(async () => {
    await opened?.database.close();
    await opened?.testDatabase.drop();
    opened = undefined;
  });

  // 0005 replaces the last-seen log keyed by activation id with one keyed by machine; a server of
  // the previous version may have left sightings in the old log when it stopped.
  it("0005 applies what the previous last-seen log held, then drops it", async () => {
    const testDatabase = await createTestDatabase(dialect);
    const database = await openDatabase(testDatabase.url);
    opened = { database, testDatabase };
    const db = database.db;
    await migrateTo(db, "0004_activation_sightings");
    await sql`insert into products (id, slug, name, created_at) values ('prd_1', 'app', 'App', 0)`.execute(
      db,
    );
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

  // 0006 rebuilds SQLite's licenses as a WITHOUT ROWID table keyed by license key; it must keep
  // every row, constraint and foreign key, and going down must give the rowid table back.
  it("0006 keys licenses by license key on SQLite, keeping every row and constraint", async () => {
    const testDatabase = await createTestDatabase(dialect);
    const database = await openDatabase(testDatabase.url);
    opened = { database, testDatabase };
    const db = database.db;
    await migrateTo(db, "0005_machine_sightings");
    await sql`insert into products (id, slug, name, created_at) values ('prd_1', 'app', 'App', 0)`.execute(
      db,
    );
    await sql`insert into licenses (id, license_key, product_id, status, expires_at, edition,
      edition_name, features, max_machines, active_machines, created_at, updated_at,
      customer_name, customer_email, note)
      values ('lic_1', 'KEY-1', 'prd_1', 'ACTIVE', 5000, 'pro', 'Pro', '["a"]', 3, 1, 10, 20,
              'Ada', 'ada@example.com', 'first'),
             ('lic_2', 'KEY-2', 'prd_1', 'SUSPENDED', null, null, null, '[]', 1, 0, 11, 21,
              null, null, null)`.execute(db);
    await sql`insert into activations (id, license_id, machine_id, activated_at, last_seen_at)
      values ('act_1', 'lic_1', 'm-1', 0, 1000)`.execute(db);
    const everything = () => sql`select * from licenses order by id`.execute(db);
    const before = (await everything()).rows;

    await migrateToLatest(db);

    expect((await everything()).rows).toEqual(before);
    const definition = await sql<{ sql: string }>`select sql from sqlite_master
      where type = 'table' and name = 'licenses'`
      .execute(db)
      .catch(() => ({ rows: [] as Array<{ sql: string }> }));
    expect(/without rowid/i.test(definition.rows[0]?.sql ?? "")).toBe(dialect === "sqlite");
    // Still enforced: unique keys and ids, checks, and the foreign keys both ways.
    const insertLicense = (id: string, key: string, product = "prd_1", status = "ACTIVE") =>
      sql`insert into licenses (id, license_key, product_id, status, features, max_machines,
        active_machines, created_at, updated_at)
        values (${id}, ${key}, ${product}, ${status}, '[]', 1, 0, 0, 0)`.execute(db);
    await expect(insertLicense("lic_3", "KEY-1")).rejects.toThrow();
    await expect(insertLicense("lic_1", "KEY-3")).rejects.toThrow();
    await expect(insertLicense("lic_3", "KEY-3", "prd_missing")).rejects.toThrow();
    await expect(insertLicense("lic_3", "KEY-3", "prd_1", "LOST")).rejects.toThrow();
    await expect(
      sql`insert into activations (id, license_id, machine_id, activated_at, last_seen_at)
        values ('act_2', 'lic_missing', 'm-2', 0, 0)`.execute(db),
    ).rejects.toThrow();
    await expect(sql`delete from licenses where id = 'lic_1'`.execute(db)).rejects.toThrow();
    const plan = await sql<{ detail: string }>`explain query plan
      select id from licenses where license_key = 'KEY-1'`
      .execute(db)
      .catch(() => ({ rows: [] as Array<{ detail: string }> }));
    if (dialect === "sqlite") {
      expect(plan.rows.map((row) => row.detail)).toEqual([
        "SEARCH licenses USING PRIMARY KEY (license_key=?)",
      ]);
      const indexes = await sql<{ name: string }>`select name from sqlite_master
        where type = 'index' and tbl_name = 'licenses' and sql is not null order by name`.execute(
        db,
      );
      expect(indexes.rows.map((row) => row.name)).toEqual([
        "licenses_created_idx",
        "licenses_product_idx",
      ]);
    }
    // Kysely records a migration only after it ran: running it again after a crash is harmless.
    await licensesByKey.up(db as Kysely<unknown>);
    expect((await everything()).rows).toEqual(before);

    await migrateTo(db, "0005_machine_sightings");
    expect((await everything()).rows).toEqual(before);
    const back = await sql<{ sql: string }>`select sql from sqlite_master
      where type = 'table' and name = 'licenses'`
      .execute(db)
      .catch(() => ({ rows: [] as Array<{ sql: string }> }));
    expect(back.rows.some((row) => /without rowid/i.test(row.sql))).toBe(false);
    await expect(insertLicense("lic_3", "KEY-1")).rejects.toThrow();
  });
});
