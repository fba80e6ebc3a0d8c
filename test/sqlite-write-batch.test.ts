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
