import { statSync } from "node:fs";
import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../src/db/database.js";
import { inTransaction } from "../src/db/in-transaction.js";
import { activateMachine } from "../src/domain/licenses/activate-machine.js";
import { LastSeenBuffer } from "../src/domain/licenses/last-seen.js";
import { createLicense } from "../src/domain/licenses/manage-licenses.js";
import { createProduct } from "../src/domain/products/products.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { createTestDatabase, type TestDatabase } from "./helpers/database.js";

// The server checkpoints SQLite's WAL from a worker thread (src/db/sqlite-background-worker.ts).
// Committed pages reach the database file only through a checkpoint, so the file's size shows
// whether one ran.
describe("the SQLite background thread: WAL checkpoints and last-seen writes", () => {
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
      backgroundWorker: background ? { onError: (m: string) => errors.push(m) } : undefined,
    });
    opened = { database, testDatabase };
    await migrateToLatest(database.db);
    const file = testDatabase.url.slice("sqlite:".length);
    return { database, db: database.db, fileSize: () => statSync(file).size, errors };
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

  async function activatedMachines(db: Database["db"], count: number): Promise<string[]> {
    await createProduct(db, { slug: "bg-app", name: "Background App" });
    const { licenseKey } = await createLicense(db, { productSlug: "bg-app", maxMachines: count });
    await Promise.all(
      Array.from({ length: count }, (_, i) =>
        activateMachine(db, {
          licenseKey,
          machineId: `bg-${i}`,
          productSlug: "bg-app",
          machineName: null,
          platform: null,
        }),
      ),
    );
    return (await db.selectFrom("activations").select("id").orderBy("id").execute()).map(
      (r) => r.id,
    );
  }

  it("writes validate's last-seen times from the background thread", async () => {
    const { database, db, errors } = await open(true);
    const ids = await activatedMachines(db, 50);
    const background = database.lastSeenWriter();
    if (!background) throw new Error("no background writer");
    let writerCalls = 0;
    const buffer = new LastSeenBuffer({
      oneTransaction: true,
      writer: () => (entries) => {
        writerCalls++;
        return background(entries);
      },
    });
    ids.forEach((id, i) => buffer.record(id, 7_000_000 + i));
    await buffer.flush(db);
    const rows = await db
      .selectFrom("activations")
      .select(["id", "last_seen_at"])
      .orderBy("id")
      .execute();
    expect(rows.map((r) => r.last_seen_at)).toEqual(ids.map((_, i) => 7_000_000 + i));
    expect(writerCalls).toBe(1);
    expect(errors).toEqual([]);
  });

  // Correctness under concurrency; that the main thread waits asynchronously rather than in
  // SQLite's busy handler is a property of SqliteWriteGate this test cannot observe.
  it("takes turns with the app's own writes: every write of both lands", async () => {
    const { database, db } = await open(true);
    const ids = await activatedMachines(db, 200);
    const writer = database.lastSeenWriter();
    if (!writer) throw new Error("no background writer");
    const entries = Array.from({ length: 5000 }, (_, i): [string, number] => [
      ids[i % ids.length] as string,
      9_000_000 + i,
    ]);
    await Promise.all([
      writer(entries),
      ...Array.from({ length: 30 }, (_, i) =>
        inTransaction(db, (trx) =>
          sql`insert into products (id, slug, name, created_at)
            values (${`prd_turn_${i}`}, ${`turn-${i}`}, 'x', 0)`.execute(trx),
        ),
      ),
    ]);
    const products = await db
      .selectFrom("products")
      .select("id")
      .where("slug", "like", "turn-%")
      .execute();
    expect(products).toHaveLength(30);
    const latest = await db
      .selectFrom("activations")
      .select((eb) => eb.fn.max("last_seen_at").as("latest"))
      .executeTakeFirstOrThrow();
    expect(latest.latest).toBe(9_000_000 + 4999);
  });

  it("survives starting before the migrations have created its tables", async () => {
    const testDatabase = await createTestDatabase("sqlite");
    const errors: string[] = [];
    const database = await openDatabase(testDatabase.url, {
      backgroundWorker: { onError: (m: string) => errors.push(m) },
    });
    opened = { database, testDatabase };
    await new Promise((resolve) => setTimeout(resolve, 300));
    await migrateToLatest(database.db);
    const [id] = await activatedMachines(database.db, 1);
    const writer = database.lastSeenWriter();
    expect(writer).not.toBeNull();
    await writer?.([[id as string, 4_242_424]]);
    const row = await database.db
      .selectFrom("activations")
      .select("last_seen_at")
      .executeTakeFirstOrThrow();
    expect(row.last_seen_at).toBe(4_242_424);
    expect(errors).toEqual([]);
  });

  it("is not there for databases opened without it (CLI, tests)", async () => {
    const { database } = await open(false);
    expect(database.lastSeenWriter()).toBeNull();
  });
});
