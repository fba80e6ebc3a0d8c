import { once } from "node:events";
import { statSync } from "node:fs";
import { dirname, join } from "node:path";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import BetterSqlite3 from "better-sqlite3";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/database.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { startServer } from "../helpers/server-process.js";

describe("SQLite files", () => {
  it("are private: the directory is created 0700, the database and its WAL files 0600", async () => {
    const root = mkdtempSync(join(tmpdir(), "shipkey-perm-"));
    const path = join(root, "nested", "data", "shipkey.db");
    const database = await openDatabase(`sqlite:${path}`);
    try {
      await migrateToLatest(database.db);
      expect(statSync(dirname(path)).mode & 0o777).toBe(0o700);
      for (const file of [path, `${path}-wal`, `${path}-shm`]) {
        expect(statSync(file).mode & 0o777).toBe(0o600);
      }
    } finally {
      await database.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("SQLite storage", () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture("sqlite");
  });
  afterAll(async () => {
    await f.close();
  });

  it("lets SQLite place license rows (rowids in insertion order) and keeps no trigger", async () => {
    const keys = [await f.createLicense(), await f.createLicense(), await f.createLicense()];
    const { rows } = await sql<{ rowid: number; license_key: string }>`
      select rowid, license_key from licenses order by rowid`.execute(f.db);
    expect(rows.map((row) => row.license_key).slice(-3)).toEqual(keys);
    const triggers = await sql`select name from sqlite_schema where type = 'trigger'`.execute(f.db);
    expect(triggers.rows).toEqual([]);
  });

  it("sees an operator's plain SQL, from another connection, at the next request", async () => {
    const operator = new BetterSqlite3(f.url.slice("sqlite:".length));
    const run = (text: string, ...values: unknown[]) => operator.prepare(text).run(...values);
    const licenseKey = await f.createLicense({ maxMachines: 2 });
    const body = { licenseKey, machineId: "m-op", productSlug: f.product.slug };
    expect((await f.post("/api/license/activate", body)).statusCode).toBe(200);
    run("update licenses set status = 'SUSPENDED' where license_key = ?", licenseKey);
    const suspended = await f.post("/api/license/validate", body);
    expect(suspended.json()).toMatchObject({ valid: false, code: "LICENSE_NOT_ACTIVE" });
    run("update licenses set status = 'ACTIVE' where license_key = ?", licenseKey);
    // Ending the activation by hand: validate sees it at once (no list to go stale).
    run("update activations set deactivated_at = 1 where machine_id = 'm-op'");
    operator.close();
    const ended = await f.post("/api/license/validate", body);
    expect(ended.json()).toMatchObject({ valid: false, code: "MACHINE_NOT_ACTIVATED" });
  });
});

describe("SQLite checkpoints from a thread of their own", () => {
  it("copy what any connection committed into the database file", async () => {
    const root = mkdtempSync(join(tmpdir(), "shipkey-ckpt-"));
    const path = join(root, "shipkey.db");
    const server = await startServer({ DATABASE_URL: `sqlite:${path}` });
    try {
      const before = statSync(path).size;
      // ~2 MB committed by a connection that never checkpoints itself.
      const writer = new BetterSqlite3(path);
      writer.pragma("wal_autocheckpoint = 0");
      const insert = writer.prepare(`insert into audit_log (id, at, actor_type, actor_label,
        action, target_type, target_id, details) values (?, 0, 'cli', 'cli', 'test', 'test', 'x', ?)`);
      writer.transaction(() => {
        for (let i = 0; i < 400; i++) insert.run(`aud_${i}`, "x".repeat(5000));
      })();
      writer.close();
      const deadline = Date.now() + 60_000;
      while (statSync(path).size < before + 2_000_000 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(statSync(path).size).toBeGreaterThanOrEqual(before + 2_000_000);
    } finally {
      server.child.kill("SIGTERM");
      await once(server.child, "exit");
      rmSync(root, { recursive: true, force: true });
    }
  });
});
