import BetterSqlite3 from "better-sqlite3";
import { Kysely, SqliteDialect } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { batchedPerTurn, batchesPgReads, pgReadBatchLimit } from "../src/db/pg-read-batch.js";
import type { DB } from "../src/db/schema.js";
import { dialects } from "./helpers/database.js";
import { createFixture, type Fixture } from "./helpers/fixture.js";

// The scheduling of src/db/pg-read-batch.ts, with a batch function that records what it was
// given; the SQL it runs on PostgreSQL is tested in compiled-queries.test.ts.
describe("reads batched per event-loop turn", () => {
  const handle = () =>
    new Kysely<DB>({ dialect: new SqliteDialect({ database: new BetterSqlite3(":memory:") }) });

  const recording = () => {
    const batches: number[][] = [];
    const read = batchedPerTurn(async (_db, inputs: number[]) => {
      batches.push(inputs);
      return inputs.map((n) => n * 10);
    });
    return { batches, read };
  };

  it("sends the reads of one turn together, in order, and gives each its own answer", async () => {
    const { batches, read } = recording();
    const db = handle();
    const answers = await Promise.all([1, 2, 3].map((n) => read(db, n)));
    expect(answers).toEqual([10, 20, 30]);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it("starts a new batch for reads of a later turn", async () => {
    const { batches, read } = recording();
    const db = handle();
    await read(db, 1);
    await read(db, 2);
    expect(batches).toEqual([[1], [2]]);
  });

  it("splits a turn's reads into statements of at most pgReadBatchLimit", async () => {
    const { batches, read } = recording();
    const db = handle();
    const inputs = Array.from({ length: pgReadBatchLimit * 2 + 1 }, (_, i) => i);
    expect(await Promise.all(inputs.map((n) => read(db, n)))).toEqual(inputs.map((n) => n * 10));
    expect(batches.map((batch) => batch.length)).toEqual([pgReadBatchLimit, pgReadBatchLimit, 1]);
  });

  it("keeps the reads of different database handles apart", async () => {
    const { batches, read } = recording();
    const [one, two] = [handle(), handle()];
    await Promise.all([read(one, 1), read(two, 2), read(one, 3)]);
    expect(batches).toEqual([[1, 3], [2]]);
  });

  it("fails only the read that fails its batch: the others run again alone and are answered", async () => {
    const sent: number[][] = [];
    const read = batchedPerTurn(async (_db, inputs: number[]) => {
      sent.push(inputs);
      if (inputs.includes(2)) throw new Error("cannot encode 2");
      return inputs.map((n) => n * 10);
    });
    const db = handle();
    const outcomes = await Promise.allSettled([1, 2, 3].map((n) => read(db, n)));
    expect(outcomes.map((o) => (o.status === "fulfilled" ? o.value : String(o.reason)))).toEqual([
      10,
      "Error: cannot encode 2",
      30,
    ]);
    expect(sent).toEqual([[1, 2, 3], [1], [2], [3]]);
  });

  it("rejects every read when the database fails them all, and the next turn's reads run again", async () => {
    let fail = true;
    const read = batchedPerTurn(async (_db, inputs: number[]) => {
      if (fail) throw new Error("connection lost");
      return inputs;
    });
    const db = handle();
    const failed = await Promise.allSettled([read(db, 1), read(db, 2)]);
    expect(failed.map((result) => result.status)).toEqual(["rejected", "rejected"]);
    fail = false;
    expect(await read(db, 3)).toBe(3);
  });

  it("refuses a batch answer that does not answer every read", async () => {
    const read = batchedPerTurn(async (_db, inputs: number[]) => inputs.slice(1));
    const db = handle();
    const outcomes = await Promise.allSettled([read(db, 1), read(db, 2)]);
    expect(outcomes.map((o) => (o.status === "rejected" ? String(o.reason) : "answered"))).toEqual([
      "Error: a batched read answered 0 of 1 reads",
      "Error: a batched read answered 0 of 1 reads",
    ]);
  });
});

describe.each(dialects)("which handles batch their reads (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => {
    await f.close();
  });

  it("only PostgreSQL's pooled handle, never a transaction, which must see its own writes", async () => {
    expect(batchesPgReads(f.db)).toBe(dialect === "postgres");
    await f.db.transaction().execute(async (trx) => {
      expect(batchesPgReads(trx)).toBe(false);
    });
  });
});
