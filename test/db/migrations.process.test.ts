import { execFile } from "node:child_process";
import { resolve } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { type Kysely, type Migration, Migrator, sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { MigrationError, migrateTo, migrateToLatest } from "../../src/db/migrate.js";
import { type Database, openDatabase } from "../../src/db/database.js";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/database.js";

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

    await migrateTo(db, "0005_machine_sightings");

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
    const left = await sql<{
      n: number | string;
    }>`select count(*) as n from machine_sightings`.execute(db);
    expect(Number(left.rows[0]?.n)).toBe(0);

    // Down again: pending sightings go back to the old log, by the machine's active activation.
    await sql`insert into machine_sightings (license_id, machine_id, seen_at)
      values ('lic_1', 'm-2', 12000)`.execute(db);
    await migrateTo(db, "0004_activation_sightings");
    const back = await sql<{
      activation_id: string;
      seen_at: number | string;
    }>`select activation_id, seen_at from activation_sightings`.execute(db);
    expect(back.rows.map((r) => [r.activation_id, Number(r.seen_at)])).toEqual([["act_2", 12_000]]);
  });

  // 0006 (SQLite) gives each license row the list of its active machines, from the activations
  // already there; down() removes the list and its triggers.
  it("0007 applies what the in-database last-seen log held, then drops it", async () => {
    const db = await openAt("0006_active_machine_list");
    await sql`insert into licenses (id, license_key, product_id, status, features, max_machines,
      active_machines, created_at, updated_at)
      values ('lic_1', 'KEY-1', 'prd_1', 'ACTIVE', '[]', 3, 2, 0, 0)`.execute(db);
    await sql`insert into activations (id, license_id, machine_id, activated_at, last_seen_at,
      deactivated_at)
      values ('act_1', 'lic_1', 'm-1', 0, 1000, null), ('act_2', 'lic_1', 'm-2', 0, 9000, null),
             ('act_old', 'lic_1', 'm-1', 0, 500, 700)`.execute(db);
    await sql`insert into machine_sightings (license_id, machine_id, seen_at)
      values ('lic_1', 'm-1', 5000), ('lic_1', 'm-1', 7000), ('lic_1', 'm-2', 8000),
             ('lic_1', 'm-never', 9999)`.execute(db);

    await migrateToLatest(db);

    const times = await db
      .selectFrom("activations")
      .select(["id", "last_seen_at"])
      .orderBy("id")
      .execute();
    // The latest sighting goes to the machine's active activation; a time never moves back.
    expect(times).toEqual([
      { id: "act_1", last_seen_at: 7000 },
      { id: "act_2", last_seen_at: 9000 },
      { id: "act_old", last_seen_at: 500 },
    ]);
    await expect(sql`select count(*) from machine_sightings`.execute(db)).rejects.toThrow();

    // Down again: the table is back, empty, for the previous version's server, which appends
    // without naming seq.
    await migrateTo(db, "0006_active_machine_list");
    const left = await sql<{
      n: number | string;
    }>`select count(*) as n from machine_sightings`.execute(db);
    expect(Number(left.rows[0]?.n)).toBe(0);
    await sql`insert into machine_sightings (license_id, machine_id, seen_at)
      values ('lic_1', 'm-1', 10000)`.execute(db);
    const appended = await sql<{
      seq: number | string;
    }>`select seq from machine_sightings`.execute(db);
    expect(appended.rows.map((r) => Number(r.seq))).toEqual([1]);
  });

  it.runIf(dialect === "sqlite")(
    "0009 gives license rows rowids 1..n in creation order, wherever they were",
    async () => {
      const db = await openAt("0008_license_slots");
      // Rows where 0.1 put them (hashes of their keys) or an import did (negative, zero).
      for (const [rowid, id, createdAt] of [
        [-7, "lic_c", 30],
        [-3, "lic_a", 10],
        [0, "lic_d", 40],
        [4_503_599_627_370_495, "lic_b", 20],
      ] as const) {
        await sql`insert into licenses (rowid, id, license_key, product_id, status, features,
          max_machines, active_machines, created_at, updated_at)
          values (${rowid}, ${id}, ${`KEY-${id}`}, 'prd_1', 'ACTIVE', '[]', 1, 0,
            ${createdAt}, 0)`.execute(db);
      }
      await migrateToLatest(db);
      const { rows } = await sql<{ rowid: number; id: string }>`
        select rowid, id from licenses order by rowid`.execute(db);
      expect(rows).toEqual([
        { rowid: 1, id: "lic_a" },
        { rowid: 2, id: "lic_b" },
        { rowid: 3, id: "lic_c" },
        { rowid: 4, id: "lic_d" },
      ]);
    },
  );

  it("a migration that fails part-way leaves nothing of itself behind", async () => {
    const testDatabase = await createTestDatabase(dialect);
    const database = await openDatabase(testDatabase.url);
    opened = { database, testDatabase };
    const db = database.db as Kysely<unknown>;
    const createsThenFails: Migration = {
      up: async (trx) => {
        await sql`create table half_done (id integer primary key)`.execute(trx);
        await sql`insert into half_done (id) values (1)`.execute(trx);
        throw new Error("killed here");
      },
    };
    const migrator = new Migrator({
      db,
      provider: {
        getMigrations: async () => ({ "0001_fine": fine, "0002_fails": createsThenFails }),
      },
    });
    const result = await migrator.migrateToLatest();
    expect(result.error).toBeInstanceOf(Error);
    // All pending migrations are one transaction: the fine one is rolled back with the other.
    await expect(sql`select id from half_done`.execute(db)).rejects.toThrow(/half_done/);
    await expect(sql`select id from fine`.execute(db)).rejects.toThrow(/fine/);
    const recorded = await sql<{ name: string }>`select name from kysely_migration`.execute(db);
    expect(recorded.rows).toEqual([]);
  });

  it("refuses a database that a newer version migrated, even with nothing pending", async () => {
    const testDatabase = await createTestDatabase(dialect);
    const database = await openDatabase(testDatabase.url);
    opened = { database, testDatabase };
    await migrateToLatest(database.db);
    await sql`insert into kysely_migration (name, timestamp)
      values ('0099_from_a_newer_version', '2027-01-01T00:00:00.000Z')`.execute(database.db);
    await expect(migrateToLatest(database.db)).rejects.toThrow(/0099_from_a_newer_version/);
  });
});

const fine: Migration = {
  up: async (db) => {
    await sql`create table fine (id integer primary key)`.execute(db);
  },
};

const allMigrations = [
  "0001_initial",
  "0002_admin",
  "0003_admins",
  "0004_activation_sightings",
  "0005_machine_sightings",
  "0006_active_machine_list",
  "0007_last_seen_log_file",
  "0008_license_slots",
  "0009_plain_storage",
  "0010_idempotency_and_retention",
  "0011_update_feeds",
  "0012_tauri_public_key",
  "0013_signing_keys",
  "0014_update_access_and_counts",
  "0015_idempotency_applied",
  "0016_license_integrity",
  "0017_api_key_products",
  "0018_audit_without_license_keys",
  "0019_webhooks",
  "0020_rollouts",
  "0021_machine_leases",
  "0022_daily_counts",
  "0023_machine_app_versions",
  "0024_license_overview_indexes",
  "0025_webhook_url_changes",
  "0026_api_key_creators",
  "0027_release_notes_html",
  "0028_plans",
  "0029_license_plans",
  "0030_email_outbox",
  "0031_email_templates",
  "0032_integrations",
  "0033_integration_events",
  "0034_sales",
];

/**
 * Runs migrateToLatest in a separate process on `url`, as a server or CLI start does. It prints
 * "ready" once it has loaded and opened the database, just before migrating; `migrateAt` (epoch
 * ms) makes it wait until then first. Resolves with "ok" or the process's stderr.
 */
function migrateInAnotherProcess(
  url: string,
  options: { migrateAt?: number; onReady?: () => void } = {},
): Promise<string> {
  const dist = (path: string) => JSON.stringify(resolve("dist", path));
  const script = `
    const { openDatabase } = await import(${dist("db/database.js")});
    const { migrateToLatest } = await import(${dist("db/migrate.js")});
    const database = await openDatabase(${JSON.stringify(url)});
    await new Promise((at) => setTimeout(at, ${options.migrateAt ?? 0} - Date.now()));
    process.stdout.write("ready\\n");
    try { await migrateToLatest(database.db); } finally { await database.close(); }`;
  return new Promise((done) => {
    const child = execFile(
      process.execPath,
      ["--input-type=module", "-e", script],
      { timeout: 60_000 },
      (err, _stdout, stderr) => done(err ? stderr || err.message : "ok"),
    );
    child.stdout?.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("ready")) options.onReady?.();
    });
  });
}

const executedMigrations = async (url: string): Promise<string[]> => {
  const database = await openDatabase(url);
  try {
    const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(
      database.db,
    );
    return rows.map((row) => row.name).sort();
  } finally {
    await database.close();
  }
};

// A cluster, or the CLI beside the server, may start several processes on a fresh file at once.
// Before the migrations ran in one BEGIN IMMEDIATE transaction, some of them failed ("table
// "products" already exists", "duplicate column name") in about one start of ten.
describe("migrations (sqlite, several processes)", () => {
  it("processes starting together on a fresh file all migrate it, one at a time", async () => {
    for (let round = 0; round < 4; round++) {
      const testDatabase = await createTestDatabase("sqlite");
      try {
        // Each process loads and opens first, then all migrate at the same instant.
        const migrateAt = Date.now() + 1500;
        const processes = Array.from({ length: 4 }, () =>
          migrateInAnotherProcess(testDatabase.url, { migrateAt }),
        );
        expect(await Promise.all(processes)).toEqual(["ok", "ok", "ok", "ok"]);
        expect(await executedMigrations(testDatabase.url)).toEqual(allMigrations);
      } finally {
        await testDatabase.drop();
      }
    }
  });

  it("0027 renders the release notes already stored, in a process with nothing else to wait on", async () => {
    const testDatabase = await createTestDatabase("sqlite");
    try {
      const database = await openDatabase(testDatabase.url);
      await migrateTo(database.db, "0026_api_key_creators");
      const now = Date.now();
      await sql`insert into products (id, slug, name, created_at)
        values ('prod_1', 'app', 'App', ${now})`.execute(database.db);
      await sql`insert into release_versions (id, product_id, version, channel, release_notes,
          sort_key, created_at, updated_at)
        values ('ver_1', 'prod_1', '1.0.0', 'STABLE', '**Fixed**', '', ${now}, ${now})`.execute(
        database.db,
      );
      await database.close();
      // The renderer's thread never holds a process open; its pending render must.
      expect(await migrateInAnotherProcess(testDatabase.url)).toBe("ok");
      const migrated = await openDatabase(testDatabase.url);
      const { rows } = await sql<{ html: string }>`
        select release_notes_html as html from release_versions`.execute(migrated.db);
      await migrated.close();
      expect(rows).toEqual([{ html: "<p><strong>Fixed</strong></p>\n" }]);
    } finally {
      await testDatabase.drop();
    }
  });

  /** A fresh file in WAL mode, and another connection that holds its write lock. */
  const lockedDatabase = async (migrated: boolean) => {
    const testDatabase = await createTestDatabase("sqlite");
    if (migrated) {
      const database = await openDatabase(testDatabase.url);
      await migrateToLatest(database.db);
      await database.close();
    }
    const other = new BetterSqlite3(testDatabase.url.slice("sqlite:".length));
    other.pragma("journal_mode = WAL");
    other.exec("begin immediate");
    return {
      url: testDatabase.url,
      release: () => other.exec("commit"),
      close: async () => {
        other.close();
        await testDatabase.drop();
      },
    };
  };

  it("a process waits for another one's long migration instead of failing after 5 s", async () => {
    const locked = await lockedDatabase(false);
    try {
      let readyAt = 0;
      let finished = false;
      const migrating = migrateInAnotherProcess(locked.url, {
        onReady: () => (readyAt = Date.now()),
      }).finally(() => (finished = true));
      while (readyAt === 0 && !finished) await new Promise((done) => setTimeout(done, 50));
      // Past the usual busy_timeout, counted from when it began to migrate: still waiting.
      await new Promise((done) => setTimeout(done, 6000 - (Date.now() - readyAt)));
      expect(finished).toBe(false);
      locked.release();
      expect(await migrating).toBe("ok");
      expect(await executedMigrations(locked.url)).toEqual(allMigrations);
    } finally {
      await locked.close();
    }
  });

  it("a start on a migrated file takes no write lock: it finishes while another writer holds it", async () => {
    const locked = await lockedDatabase(true);
    try {
      expect(await migrateInAnotherProcess(locked.url)).toBe("ok");
    } finally {
      await locked.close();
    }
  });

  it("busy_timeout is back to 5 s after migrating, and after a failed migration", async () => {
    const testDatabase = await createTestDatabase("sqlite");
    const database = await openDatabase(testDatabase.url);
    const busyTimeout = async () =>
      (await sql<{ timeout: number }>`pragma busy_timeout`.execute(database.db)).rows[0]?.timeout;
    try {
      await migrateToLatest(database.db);
      expect(await busyTimeout()).toBe(5000);
      await expect(migrateTo(database.db, "0099_no_such_migration")).rejects.toThrow(
        MigrationError,
      );
      expect(await busyTimeout()).toBe(5000);
    } finally {
      await database.close();
      await testDatabase.drop();
    }
  });
});
