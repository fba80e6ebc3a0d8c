import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inTransaction } from "../src/db/in-transaction.js";
import { createFixture, type Fixture } from "./helpers/fixture.js";

// On SQLite, transactions requested in the same event-loop turn share one SQLite transaction,
// one savepoint each (src/db/sqlite-write-batch.ts). Each must still commit or fail on its own.
describe("group commit (sqlite)", () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture("sqlite");
  });
  afterAll(async () => {
    await f.close();
  });

  const insertProduct = (slug: string) => (trx: Fixture["db"]) =>
    sql`insert into products (id, slug, name, created_at)
      values (${`prd_${slug}`}, ${slug}, ${slug}, 0)`.execute(trx);
  const slugs = async () =>
    (await f.db.selectFrom("products").select("slug").where("slug", "like", "gc-%").execute())
      .map((r) => r.slug)
      .sort();

  it("keeps the units that succeed and rolls back only the one that fails", async () => {
    const results = await Promise.allSettled([
      inTransaction(f.db, async (trx) => insertProduct("gc-a")(trx)),
      inTransaction(f.db, async (trx) => {
        await insertProduct("gc-b")(trx);
        throw new Error("unit b fails after writing");
      }),
      inTransaction(f.db, async (trx) => insertProduct("gc-c")(trx)),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(await slugs()).toEqual(["gc-a", "gc-c"]);
  });

  it("lets a unit see what earlier units of its batch wrote", async () => {
    const [, seen] = await Promise.all([
      inTransaction(f.db, async (trx) => insertProduct("gc-seen")(trx)),
      inTransaction(f.db, async (trx) =>
        trx.selectFrom("products").select("slug").where("slug", "=", "gc-seen").execute(),
      ),
    ]);
    expect(seen).toEqual([{ slug: "gc-seen" }]);
  });

  it("answers nobody before the commit: when the commit fails, every unit fails and nothing is kept", async () => {
    // A deferred foreign-key violation passes every statement and fails only at COMMIT.
    const results = await Promise.allSettled([
      inTransaction(f.db, async (trx) => insertProduct("gc-lost")(trx)),
      inTransaction(f.db, async (trx) => {
        await sql`pragma defer_foreign_keys = on`.execute(trx);
        await sql`insert into activations (id, license_id, machine_id, activated_at, last_seen_at)
          values ('act_orphan', 'lic_missing', 'm', 0, 0)`.execute(trx);
      }),
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(String((results[0] as PromiseRejectedResult).reason)).toMatch(/FOREIGN KEY/i);
    expect(await slugs()).not.toContain("gc-lost");
    // The connection is usable again afterwards.
    await inTransaction(f.db, async (trx) => insertProduct("gc-after")(trx));
    expect(await slugs()).toContain("gc-after");
  });
});

// Another process writing between a transaction's first read and its first write must not make
// that write fail (SQLITE_BUSY_SNAPSHOT): transactions begin IMMEDIATE. The other writer here is
// a worker thread with its own connection, like the CLI beside a running server.
describe("write transactions and a concurrent writer (sqlite)", () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture("sqlite");
  });
  afterAll(async () => {
    await f.close();
  });

  it("read-then-write succeeds although another connection commits in between", async () => {
    const worker = new Worker(
      `const { parentPort, workerData } = require("node:worker_threads");
       const Database = require(workerData.driver);
       const db = new Database(workerData.path);
       db.pragma("busy_timeout = 5000");
       parentPort.once("message", () => {
         db.prepare("insert into products (id, slug, name, created_at) values ('prd_other', 'other-writer', 'x', 0)").run();
         db.close();
         parentPort.postMessage("written");
       });`,
      {
        eval: true,
        workerData: {
          path: f.url.slice("sqlite:".length),
          driver: createRequire(import.meta.url).resolve("better-sqlite3"),
        },
      },
    );
    const written = new Promise((resolve) => worker.once("message", resolve));
    try {
      await inTransaction(f.db, async (trx) => {
        await trx.selectFrom("products").select("id").execute();
        worker.postMessage("write now");
        // The other writer gets in now unless this transaction already holds the write lock.
        await Promise.race([written, new Promise((resolve) => setTimeout(resolve, 300))]);
        await insertProduct("after-other-writer")(trx);
      });
      await written;
      const slugs = await f.db
        .selectFrom("products")
        .select("slug")
        .where("slug", "in", ["other-writer", "after-other-writer"])
        .execute();
      expect(slugs.map((r) => r.slug).sort()).toEqual(["after-other-writer", "other-writer"]);
    } finally {
      await worker.terminate();
    }
  });

  const insertProduct = (slug: string) => (trx: Fixture["db"]) =>
    sql`insert into products (id, slug, name, created_at)
      values (${`prd_${slug}`}, ${slug}, ${slug}, 0)`.execute(trx);
});
