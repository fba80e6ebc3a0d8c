import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { type Database, type Dialect, openDatabase } from "../../src/db/database.js";
import { migrateToLatest } from "../../src/db/migrate.js";

/** SQLite always; PostgreSQL too when TEST_DATABASE_URL names a server to create databases on. */
export const dialects: Dialect[] = process.env.TEST_DATABASE_URL
  ? ["sqlite", "postgres"]
  : ["sqlite"];

export interface TestDatabase {
  url: string;
  /** Drops the database (PostgreSQL) or deletes its directory (SQLite). */
  drop(): Promise<void>;
}

/** A new, empty, unmigrated database of the given dialect. */
export async function createTestDatabase(dialect: Dialect): Promise<TestDatabase> {
  if (dialect === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "shipkey-test-"));
    return {
      url: `sqlite:${join(dir, "shipkey.db")}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) throw new Error("TEST_DATABASE_URL is not set");
  const name = `shipkey_test_${randomBytes(6).toString("hex")}`;
  await withAdminClient(adminUrl, (client) => client.query(`create database ${name}`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      await withAdminClient(adminUrl, (client) =>
        client.query(`drop database if exists ${name} with (force)`),
      );
    },
  };
}

async function withAdminClient<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** A fresh, migrated database, opened. */
export async function openTestDatabase(
  dialect: Dialect,
): Promise<{ database: Database; testDatabase: TestDatabase }> {
  const testDatabase = await createTestDatabase(dialect);
  const database = await openDatabase(testDatabase.url, { poolSize: 20 });
  await migrateToLatest(database.db);
  return { database, testDatabase };
}
