import { statSync } from "node:fs";
import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../src/db/database.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { createTestDatabase, type TestDatabase } from "./helpers/database.js";

// The server checkpoints SQLite's WAL from a worker thread (src/db/sqlite-checkpointer.ts).
// Committed pages reach the database file only through a checkpoint, so the file's size shows
// whether one ran.
describe("background WAL checkpoints (sqlite)", () => {
  let opened: { database: Database; testDatabase: TestDatabase } | undefined;
  afterEach(async () => {
    await opened?.database.close();
    await opened?.testDatabase.drop();
    opened = undefined;
  });

  async function open(background: boolean) {
    const testDatabase = await createTestDatabase("sqlite");
    const errors: string[] = [];
    const database = await openDatabase(testDatabase.url, {
      backgroundCheckpoints: background ? { onError: (m) => errors.push(m) } : undefined,
    });
    opened = { database, testDatabase };
    await migrateToLatest(database.db);
    const file = testDatabase.url.slice("sqlite:".length);
    return { db: database.db, fileSize: () => statSync(file).size, errors };
  }

  // ~150 pages: below SQLite's own automatic checkpoint (1000 pages), so only a background
  // checkpoint can move them into the file.
  async function writeRows(db: Database["db"]): Promise<void> {
    await db.transaction().execute(async (trx) => {
      for (let i = 0; i < 3000; i++) {
        await sql`insert into products (id, slug, name, created_at)
          values (${`prd_${i}`}, ${`slug-${i}`}, ${"x".repeat(150)}, 0)`.execute(trx);
      }
    });
  }

  const settle = () => new Promise((resolve) => setTimeout(resolve, 500));

  it("copies committed pages into the database file without the writer checkpointing", async () => {
    const { db, fileSize, errors } = await open(true);
    await settle();
    const before = fileSize();
    await writeRows(db);
    const deadline = Date.now() + 5000;
    while (fileSize() <= before && Date.now() < deadline) await settle();
    expect(fileSize()).toBeGreaterThan(before);
    expect(errors).toEqual([]);
  });

  it("leaves the pages in the WAL when it is off (the control for the test above)", async () => {
    const { db, fileSize } = await open(false);
    await settle();
    const before = fileSize();
    await writeRows(db);
    await settle();
    expect(fileSize()).toBe(before);
  });
});
