import { mkdirSync, rmSync, statSync } from "node:fs";
import BetterSqlite3 from "better-sqlite3";
import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { type Database, openDatabase, startSqliteBackgroundThread } from "../src/db/database.js";
import { inTransaction } from "../src/db/in-transaction.js";
import { activateMachine } from "../src/domain/licenses/activate-machine.js";
import { LastSeenBuffer } from "../src/domain/licenses/last-seen.js";
import { createLicense } from "../src/domain/licenses/manage-licenses.js";
import { createProduct } from "../src/domain/products/products.js";
import { migrateToLatest } from "../src/db/migrate.js";
import {
  crashThreadForTest,
  type SupervisedBackgroundWorker,
} from "../src/db/sqlite-background-worker.js";
import {
  type FoldChunks,
  foldEveryMs,
  lastSeenLogPath,
  lastSeenLogSetup,
  type Sighting,
  SqliteLastSeenLog,
} from "../src/db/sqlite-last-seen-log.js";
import { SqliteWriteGate } from "../src/db/sqlite-write-gate.js";
import { createTestDatabase, type TestDatabase } from "./helpers/database.js";
import { type Machine, machinesOf } from "./helpers/machines.js";

// The server checkpoints SQLite's WAL from a worker thread (src/db/sqlite-background-worker.ts).
// Committed pages reach the database file only through a checkpoint, so the file's size shows
// whether one ran.
/**
 * A connection to the SQLite file `file` with its last-seen log attached as the server's thread
 * attaches it (`seen_log`); the caller closes it.
 */
function withLogAttached(file: string): BetterSqlite3.Database {
  const connection = new BetterSqlite3(file, { fileMustExist: true });
  connection.pragma("busy_timeout = 5000");
  for (const step of lastSeenLogSetup(lastSeenLogPath(file))) {
    connection.prepare(step.sql).run(...(step.params ?? []));
  }
  return connection;
}

/** Sightings waiting in the last-seen log of the SQLite file `file`. */
function sightingsIn(file: string): number {
  const connection = withLogAttached(file);
  try {
    const row = connection.prepare("select count(*) as n from seen_log.machine_sightings").get();
    return (row as { n: number }).n;
  } finally {
    connection.close();
  }
}

/** The sighting of `machine` at `at`, as validate records it. */
const sighting = (machine: Machine | undefined, at: number): Sighting => [
  machine?.licenseId ?? "",
  machine?.machineId ?? "",
  at,
];

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
    return { database, db: database.db, file, fileSize: () => statSync(file).size, errors };
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

  async function activatedMachines(db: Database["db"], count: number): Promise<Machine[]> {
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
    return machinesOf(db);
  }

  const lastSeenTimes = async (db: Database["db"]) =>
    (await db.selectFrom("activations").select(["id", "last_seen_at"]).orderBy("id").execute()).map(
      (r) => r.last_seen_at,
    );
  const sightingsLeft = () => sightingsIn(opened?.testDatabase.url.slice("sqlite:".length) ?? "");

  it("appends validate's last-seen times to the log, and a fold moves them into activations", async () => {
    const { database, db, errors } = await open(true);
    const machines = await activatedMachines(db, 50);
    const before = await lastSeenTimes(db);
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
    const seenAt = Date.now() + 60_000;
    machines.forEach((m, i) => buffer.record(m.licenseId, m.machineId, seenAt + i));
    await buffer.flush(db);
    expect(writerCalls).toBe(1);
    expect(sightingsLeft()).toBe(50);
    expect(await lastSeenTimes(db)).toEqual(before);

    await database.foldLastSeen();
    expect(await lastSeenTimes(db)).toEqual(machines.map((_, i) => seenAt + i));
    expect(sightingsLeft()).toBe(0);
    expect(errors).toEqual([]);
  });

  // In WAL mode a commit to a database empties every other connection's page cache of it (the
  // event loop's too); appends are the thread's most frequent commits and must not be such.
  it("appends commit to the log's own file: the database itself sees no commit", async () => {
    const { database, db, file } = await open(true);
    const machines = await activatedMachines(db, 5);
    const writer = database.lastSeenWriter();
    if (!writer) throw new Error("no background writer");
    const watcher = new BetterSqlite3(file, { readonly: true });
    try {
      const dataVersion = () => watcher.pragma("data_version", { simple: true }) as number;
      const before = dataVersion();
      await writer(machines.map((m) => sighting(m, Date.now() + 60_000)));
      expect(sightingsLeft()).toBe(5);
      expect(dataVersion()).toBe(before);
      // The control: the fold does write activations, and the watcher sees that commit.
      await database.foldLastSeen();
      expect(dataVersion()).not.toBe(before);
    } finally {
      watcher.close();
    }
  });

  // The fold updates by id when few activations were seen and walks the whole table when many
  // were (sqlite-last-seen-log.ts); both must give the same answer.
  it.each([
    ["one activation of 200 was seen", 1],
    ["every activation of 200 was seen", 200],
  ])("folds the latest time of each activation when %s", async (_, seenCount) => {
    const { database, db } = await open(true);
    const machines = await activatedMachines(db, 200);
    const before = await lastSeenTimes(db);
    const writer = database.lastSeenWriter();
    if (!writer) throw new Error("no background writer");
    const base = Date.now() + 60_000;
    const seen = machines.slice(0, seenCount);
    // Each seen activation three times, the latest in the middle: the fold keeps the maximum.
    for (const offset of [1, 3, 2]) {
      await writer(seen.map((m, i) => sighting(m, base + i * 10 + offset)));
    }
    await database.foldLastSeen();
    expect(await lastSeenTimes(db)).toEqual(
      machines.map((_, i) => (i < seenCount ? base + i * 10 + 3 : before[i])),
    );
    expect(sightingsLeft()).toBe(0);
  });

  it("never moves last-seen back, and drops sightings of machines no longer active", async () => {
    const { database, db, errors } = await open(true);
    const [kept, ended] = await activatedMachines(db, 2);
    const writer = database.lastSeenWriter();
    if (!writer) throw new Error("no background writer");
    const later = Date.now() + 120_000;
    await db.updateTable("activations").set({ last_seen_at: later }).execute();
    await db
      .updateTable("activations")
      .set({ deactivated_at: Date.now() })
      .where("id", "=", ended?.id ?? "")
      .execute();
    await writer([
      sighting(kept, later - 5000),
      sighting(ended, later + 5000),
      [kept?.licenseId ?? "", "never-activated", later + 5000],
    ]);
    await database.foldLastSeen();
    expect(await lastSeenTimes(db)).toEqual([later, later]);
    expect(sightingsLeft()).toBe(0);
    expect(errors).toEqual([]);
  });

  it("keeps sightings appended while a fold runs for the next fold", async () => {
    const { database, db } = await open(true);
    const machines = await activatedMachines(db, 100);
    const writer = database.lastSeenWriter();
    if (!writer) throw new Error("no background writer");
    const base = Date.now() + 60_000;
    await writer(machines.map((m) => sighting(m, base)));
    await Promise.all([
      database.foldLastSeen(),
      writer(machines.map((m, i) => sighting(m, base + 1 + i))),
    ]);
    await database.foldLastSeen();
    expect(await lastSeenTimes(db)).toEqual(machines.map((_, i) => base + 1 + i));
    expect(sightingsLeft()).toBe(0);
  });

  it("folds what is left when the database is closed, for the next process to see", async () => {
    const { database, db, errors } = await open(true);
    const [machine] = await activatedMachines(db, 1);
    const seenAt = Date.now() + 60_000;
    await database.lastSeenWriter()?.([sighting(machine, seenAt)]);
    const testDatabase = opened?.testDatabase as TestDatabase;
    opened = undefined;
    await database.close();
    const reopened = await openDatabase(testDatabase.url);
    try {
      expect(await lastSeenTimes(reopened.db)).toEqual([seenAt]);
      expect(sightingsIn(testDatabase.url.slice("sqlite:".length))).toBe(0);
    } finally {
      await reopened.close();
      await testDatabase.drop();
    }
    expect(errors).toEqual([]);
  });

  // Correctness under concurrency; that the main thread waits asynchronously rather than in
  // SQLite's busy handler is a property of SqliteWriteGate this test cannot observe.
  it("takes turns with the app's own writes: every write of both lands", async () => {
    const { database, db } = await open(true);
    const machines = await activatedMachines(db, 200);
    const writer = database.lastSeenWriter();
    if (!writer) throw new Error("no background writer");
    const base = Date.now() + 60_000;
    const entries = Array.from({ length: 5000 }, (_, i) =>
      sighting(machines[i % machines.length], base + i),
    );
    await Promise.all([
      writer(entries),
      database.foldLastSeen(),
      ...Array.from({ length: 30 }, (_, i) =>
        inTransaction(db, (trx) =>
          sql`insert into products (id, slug, name, created_at)
            values (${`prd_turn_${i}`}, ${`turn-${i}`}, 'x', 0)`.execute(trx),
        ),
      ),
    ]);
    await database.foldLastSeen();
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
    expect(latest.latest).toBe(base + 4999);
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
    const [machine] = await activatedMachines(database.db, 1);
    const writer = database.lastSeenWriter();
    expect(writer).not.toBeNull();
    const seenAt = Date.now() + 60_000;
    await writer?.([sighting(machine, seenAt)]);
    await database.foldLastSeen();
    expect(await lastSeenTimes(database.db)).toEqual([seenAt]);
    expect(errors).toEqual([]);
  });

  it("refuses to start when its last-seen log cannot be opened, and says which file", async () => {
    const testDatabase = await createTestDatabase("sqlite");
    try {
      const file = testDatabase.url.slice("sqlite:".length);
      // A directory where the log's file should be: no file of that name can be opened.
      mkdirSync(lastSeenLogPath(file), { recursive: true });
      await expect(
        openDatabase(testDatabase.url, { backgroundWorker: { onError: () => {} } }),
      ).rejects.toThrow(`cannot open the last-seen log ${lastSeenLogPath(file)}`);
    } finally {
      await testDatabase.drop();
    }
  });

  it("is not there for databases opened without it (CLI, tests)", async () => {
    const { database } = await open(false);
    expect(database.lastSeenWriter()).toBeNull();
  });
});

describe("when and how the last-seen log is folded", () => {
  /**
   * A SQLite database with `count` activated machines and a last-seen log on its own background
   * thread, as the server has; `chunks` shrinks the fold's steps.
   */
  async function withLog(
    count: number,
    chunks: FoldChunks | undefined,
    unfoldedLimit: number | undefined,
    test: (f: {
      db: Database["db"];
      /** The SQLite file. */
      file: string;
      machines: Machine[];
      log: SqliteLastSeenLog;
      lastSeen: () => Promise<number[]>;
      worker: SupervisedBackgroundWorker;
      /** What the thread reported; a test that expects reports empties it. */
      errors: string[];
    }) => Promise<void>,
  ): Promise<void> {
    const testDatabase = await createTestDatabase("sqlite");
    const database = await openDatabase(testDatabase.url);
    const errors: string[] = [];
    const file = testDatabase.url.slice("sqlite:".length);
    const worker = startSqliteBackgroundThread(file, (m) => errors.push(m), {
      restartDelayMs: 50,
    });
    try {
      const db = database.db;
      await migrateToLatest(db);
      await createProduct(db, { slug: "fold-app", name: "Fold App" });
      const { licenseKey } = await createLicense(db, {
        productSlug: "fold-app",
        maxMachines: count,
      });
      for (let i = 0; i < count; i++) {
        await activateMachine(db, {
          licenseKey,
          machineId: `fold-${i}`,
          productSlug: "fold-app",
          machineName: null,
          platform: null,
        });
      }
      await test({
        db,
        file,
        machines: await machinesOf(db),
        log: new SqliteLastSeenLog(worker, new SqliteWriteGate(), chunks, unfoldedLimit),
        worker,
        errors,
        lastSeen: async () =>
          (await db.selectFrom("activations").select("last_seen_at").orderBy("id").execute()).map(
            (r) => r.last_seen_at,
          ),
      });
      expect(errors).toEqual([]);
    } finally {
      await worker.stop();
      await database.close();
      await testDatabase.drop();
    }
  }

  it("a thread that dies is replaced, and appends and folds go on with nothing appended lost", () =>
    withLog(2, undefined, undefined, async ({ machines, log, lastSeen, worker, errors }) => {
      const [first, second] = machines as [Machine, Machine];
      const t0 = Date.now() + 60_000;
      await log.append([sighting(first, t0)]);
      await worker[crashThreadForTest]();
      expect(worker.alive).toBe(true);
      for (let waited = 0; worker.restarts === 0 && waited < 5000; waited += 20) {
        await new Promise((done) => setTimeout(done, 20));
      }
      expect(worker.restarts).toBe(1);
      await log.append([sighting(second, t0 + 1)]);
      await log.fold();
      expect(await lastSeen()).toEqual([t0, t0 + 1]);
      expect(errors).toEqual(["SQLite background thread stopped; starting another in 50 ms"]);
      errors.length = 0;
    }));

  it("a thread replaced after its log file was deleted creates the log again and goes on", () =>
    withLog(1, undefined, undefined, async ({ file, machines, log, lastSeen, worker, errors }) => {
      const [machine] = machines as [Machine];
      const t0 = Date.now() + 60_000;
      for (const suffix of ["", "-wal", "-shm"]) {
        rmSync(`${lastSeenLogPath(file)}${suffix}`, { force: true });
      }
      await worker[crashThreadForTest]();
      for (let waited = 0; worker.restarts === 0 && waited < 5000; waited += 20) {
        await new Promise((done) => setTimeout(done, 20));
      }
      await log.append([sighting(machine, t0)]);
      await log.fold();
      expect(await lastSeen()).toEqual([t0]);
      expect(errors).toEqual(["SQLite background thread stopped; starting another in 50 ms"]);
      errors.length = 0;
    }));

  it("refuses appends past the bound of unfolded sightings until a fold gets through", () =>
    withLog(3, undefined, 4, async ({ machines, log, lastSeen }) => {
      const [a, b, c] = machines as [Machine, Machine, Machine];
      const t0 = Date.now() + 60_000;
      await log.append([sighting(a, t0), sighting(b, t0)]);
      await log.append([sighting(c, t0), sighting(a, t0 + 1)]);
      // As when every fold fails: nothing is folded, and the log would only grow.
      await expect(log.append([sighting(b, t0 + 1)])).rejects.toThrow(/wait for a fold/);
      await log.fold();
      await log.append([sighting(b, t0 + 2)]);
      await log.fold();
      expect(await lastSeen()).toEqual([t0 + 1, t0 + 2, t0]);
    }));

  it("at the first check (what a killed server left), then only once a minute has passed", () =>
    withLog(1, undefined, undefined, async ({ file, machines, log, lastSeen }) => {
      const [machine] = machines as [Machine];
      const t0 = Date.now() + 60_000;
      // Left by an earlier process: this one has not appended anything yet.
      const earlier = withLogAttached(file);
      earlier
        .prepare(
          "insert into seen_log.machine_sightings (license_id, machine_id, seen_at) values (?, ?, ?)",
        )
        .run(machine.licenseId, machine.machineId, t0);
      earlier.close();
      await log.foldIfDue(t0);
      expect(await lastSeen()).toEqual([t0]);

      await log.append([sighting(machine, t0 + 1)]);
      await log.foldIfDue(Date.now() + 1000);
      expect(await lastSeen()).toEqual([t0]);
      await log.foldIfDue(Date.now() + foldEveryMs);
      expect(await lastSeen()).toEqual([t0 + 1]);
    }));

  it("a fold asked for while one runs also takes what was appended before the ask", () =>
    withLog(3, undefined, undefined, async ({ machines, log, lastSeen }) => {
      const t0 = Date.now() + 60_000;
      await log.append(machines.map((m) => sighting(m, t0)));
      const running = log.fold();
      await log.append(machines.map((m) => sighting(m, t0 + 5)));
      await Promise.all([running, log.fold()]);
      expect(await lastSeen()).toEqual([t0 + 5, t0 + 5, t0 + 5]);
    }));

  it("refuses a statement with a bound LIMIT, which SQLite would re-prepare at every run", () =>
    withLog(1, undefined, undefined, async ({ worker }) => {
      await expect(
        worker.execute([{ sql: "select 1 as one limit ?", params: [1], get: true }]),
      ).rejects.toThrow(/bound LIMIT\/OFFSET/);
      const [literal] = await worker.execute([{ sql: "select 1 as one limit 1", get: true }]);
      expect(literal?.row).toEqual({ one: 1 });
    }));

  // Chunks of a few rows, so every step of the fold crosses its boundaries many times.
  const tinyChunks: FoldChunks = { append: 3, aggregate: 7, scan: 5, byKey: 4, discard: 6 };
  it.each([
    ["by id, when few activations were seen", 9],
    ["by walking activations, when many were", 150],
  ])("folds across chunk boundaries %s", (_, seenCount) =>
    withLog(200, tinyChunks, undefined, async ({ file, machines, log, lastSeen }) => {
      const before = await lastSeen();
      const base = Date.now() + 60_000;
      const seen = machines.slice(0, seenCount);
      // Several sightings per activation, the latest neither first nor last, spread over chunks.
      for (const offset of [2, 5, 1, 4, 3]) {
        await log.append(seen.map((m, i) => sighting(m, base + i * 10 + offset)));
      }
      await log.fold();
      expect(await lastSeen()).toEqual(
        machines.map((_, i) => (i < seenCount ? base + i * 10 + 5 : before[i])),
      );
      expect(sightingsIn(file)).toBe(0);
    }),
  );
});
