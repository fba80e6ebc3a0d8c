import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFixture, type Fixture } from "../helpers/fixture.js";

// Shipkey's SQLite driver (src/db/sqlite-driver.ts) shares one connection: transactions and
// lone writes hold it, reads of one event-loop turn run together between them.
describe("the SQLite driver", () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture("sqlite");
  });
  afterAll(async () => {
    await f.close();
  });

  const names = () => f.db.selectFrom("products").select("name").orderBy("slug").execute();

  it("fails only the read that fails, not the others of its turn", async () => {
    const good = names();
    const bad = sql`select * from no_such_table`.execute(f.db);
    const alsoGood = names();
    await expect(bad).rejects.toThrow(/no_such_table/);
    await expect(good).resolves.toHaveLength(2);
    await expect(alsoGood).resolves.toHaveLength(2);
  });

  it("runs a lone write after the transaction in progress, and reads see it once it is done", async () => {
    const order: string[] = [];
    let updated = (): void => {};
    const inTransaction = new Promise<void>((resolve) => (updated = resolve));
    const transaction = f.db.transaction().execute(async (trx) => {
      await trx
        .updateTable("products")
        .set({ name: "In transaction" })
        .where("slug", "=", "other-app")
        .execute();
      updated();
      // Yield a few turns: the lone write must still be waiting for the transaction.
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
      order.push("commit");
    });
    await inTransaction;
    // Another request's write, made while the transaction holds the connection.
    const write = f.db
      .updateTable("products")
      .set({ name: "Lone write" })
      .where("slug", "=", "other-app")
      .execute()
      .then(() => order.push("write"));
    await transaction;
    await write;
    expect(order).toEqual(["commit", "write"]);
    expect((await names()).map((row) => row.name)).toContain("Lone write");
  });

  it("the root handle inside a transaction throws at once, naming the transaction's handle", async () => {
    const rename = (db: typeof f.db) =>
      db.updateTable("products").set({ name: "Renamed" }).where("slug", "=", "other-app").execute();
    const uses = {
      read: () => names(),
      write: () => rename(f.db),
      transaction: () => f.db.transaction().execute(async () => {}),
    };
    for (const use of Object.values(uses)) {
      const attempt = f.db.transaction().execute(async (trx) => {
        await rename(trx);
        // Even after an await of its own: the whole callback is inside the transaction.
        await new Promise((resolve) => setImmediate(resolve));
        await use();
      });
      await expect(attempt).rejects.toThrow(
        "The root database handle was used inside a transaction, whose connection it would wait for forever: use the transaction's handle (trx) inside db.transaction().execute(async (trx) => …)",
      );
    }
    // Each transaction rolled back and gave the connection up.
    expect((await names()).map((row) => row.name)).not.toContain("Renamed");
    // The same flow uses the root handle freely once its transaction is done.
    await f.db.transaction().execute((trx) => rename(trx));
    expect((await names()).map((row) => row.name)).toContain("Renamed");
  });

  it("other requests wait for a transaction and succeed, even when started beside it by one flow", async () => {
    let updated = (): void => {};
    const inTransaction = new Promise<void>((resolve) => (updated = resolve));
    let committed = false;
    const transaction = f.db.transaction().execute(async (trx) => {
      await trx
        .updateTable("products")
        .set({ name: "Beside" })
        .where("slug", "=", "other-app")
        .execute();
      updated();
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
      committed = true;
    });
    // Started together with the transaction by this flow, not from inside its callback.
    const [, read, write, second] = await Promise.all([
      transaction,
      inTransaction.then(() => names()).then((rows) => ({ committed, rows })),
      inTransaction.then(() =>
        f.db
          .updateTable("products")
          .set({ name: "After" })
          .where("slug", "=", "desktop-app")
          .execute()
          .then(() => committed),
      ),
      inTransaction.then(() =>
        f.db.transaction().execute(async (trx) => {
          await trx.selectFrom("products").select("name").execute();
          return committed;
        }),
      ),
    ]);
    expect(read.committed).toBe(true);
    expect(read.rows.map((row) => row.name)).toContain("Beside");
    expect(write).toBe(true);
    expect(second).toBe(true);
  });

  it("answers every read of a busy turn, and each sees the writes acknowledged before it", async () => {
    const reads = [];
    for (let i = 0; i < 50; i++) {
      await f.db
        .updateTable("products")
        .set({ name: `v${i}` })
        .where("slug", "=", "desktop-app")
        .execute();
      reads.push(
        f.db
          .selectFrom("products")
          .select("name")
          .where("slug", "=", "desktop-app")
          .executeTakeFirstOrThrow(),
      );
    }
    const answers = await Promise.all(reads);
    // Each read was queued after its write committed; none sees an older name.
    answers.forEach((answer, i) => expect(Number(answer.name.slice(1))).toBeGreaterThanOrEqual(i));
  });
});
