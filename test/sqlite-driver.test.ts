import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFixture, type Fixture } from "./helpers/fixture.js";

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
    let write: Promise<unknown> = Promise.resolve();
    await f.db.transaction().execute(async (trx) => {
      await trx
        .updateTable("products")
        .set({ name: "In transaction" })
        .where("slug", "=", "other-app")
        .execute();
      write = f.db
        .updateTable("products")
        .set({ name: "Lone write" })
        .where("slug", "=", "other-app")
        .execute()
        .then(() => order.push("write"));
      // Yield a few turns: the lone write must still be waiting for the transaction.
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
      order.push("commit");
    });
    await write;
    expect(order).toEqual(["commit", "write"]);
    expect((await names()).map((row) => row.name)).toContain("Lone write");
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
