import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileOnce, compileWriteOnce, readCompiled } from "../src/db/compiled-query.js";
import { pgReadBatchLimit } from "../src/db/pg-read-batch.js";
import { limits } from "../src/domain/limits.js";
import {
  requireLicenseByKey,
  requireLicenseWithActivation,
} from "../src/domain/licenses/license-record.js";
import { dialects } from "./helpers/database.js";
import { createFixture, type Fixture } from "./helpers/fixture.js";

// The hot license reads run through a read executor: batched on SQLite
// (src/db/sqlite-read-batch.ts), named prepared statements on PostgreSQL (src/db/pg-named-reads.ts).
// Both must answer exactly as Kysely would.
describe.each(dialects)("compiled license reads (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => {
    await f.close();
  });

  it("answers many reads requested at once, each with its own row", async () => {
    const keys = await Promise.all(
      Array.from({ length: 30 }, (_, i) => f.createLicense({ maxMachines: i + 1 })),
    );
    const licenses = await Promise.all(keys.map((key) => requireLicenseByKey(f.db, key)));
    expect(licenses.map((l) => l.maxMachines)).toEqual(keys.map((_, i) => i + 1));
  });

  it("answers many license-and-machine reads requested at once, each with its own answer", async () => {
    // More reads than one PostgreSQL statement takes (pgReadBatchLimit), with machine ids that
    // an array literal must escape: each read still gets exactly its own answer.
    const [first, second] = [await f.createLicense(), await f.createLicense()];
    const hostileMachine = 'm "q" {a,b} \\ NULL ключ 🎉';
    for (const machineId of ["plain-machine", hostileMachine, "NULL"]) {
      const response = await f.post("/api/license/activate", {
        licenseKey: first,
        machineId,
        productSlug: f.product.slug,
      });
      expect(response.statusCode).toBe(200);
    }
    const cases = [
      { licenseKey: first, machineId: "plain-machine", expected: true },
      { licenseKey: first, machineId: hostileMachine, expected: true },
      { licenseKey: first, machineId: "NULL", expected: true },
      { licenseKey: first, machineId: "never-activated", expected: false },
      // Longer than any stored machine id (limits.identifier): found nowhere, on both paths.
      { licenseKey: first, machineId: "m".repeat(limits.identifier + 1), expected: false },
      { licenseKey: second, machineId: "plain-machine", expected: false },
      { licenseKey: "SK-NO-SUCH-KEY", machineId: "plain-machine", expected: "LICENSE_NOT_FOUND" },
      { licenseKey: '"quoted",{x}', machineId: hostileMachine, expected: "LICENSE_NOT_FOUND" },
    ];
    const reads = Array.from({ length: pgReadBatchLimit + 50 }, (_, i) => {
      const c = cases[i % cases.length] as (typeof cases)[number];
      return requireLicenseWithActivation(f.db, c).then(
        (found) => ({ licenseId: found.license.id, active: found.machineActive }),
        (err: { code?: string }) => ({ licenseId: null, active: String(err.code) }),
      );
    });
    const answers = await Promise.all(reads);
    const firstId = (await requireLicenseByKey(f.db, first)).id;
    const secondId = (await requireLicenseByKey(f.db, second)).id;
    answers.forEach((answer, i) => {
      const c = cases[i % cases.length] as (typeof cases)[number];
      const licenseId =
        c.licenseKey === first ? firstId : c.licenseKey === second ? secondId : null;
      expect(answer).toEqual({ licenseId, active: c.expected });
    });
  });

  it("reads inside a transaction on its connection, seeing the transaction's own writes", async () => {
    const licenseKey = await f.createLicense();
    const { id: licenseId } = await requireLicenseByKey(f.db, licenseKey);
    const seen = await f.db.transaction().execute(async (trx) => {
      await sql`insert into activations (id, license_id, machine_id, activated_at, last_seen_at)
        values ('act_in_trx', ${licenseId}, 'm-in-trx', 0, 0)`.execute(trx);
      const inside = await requireLicenseWithActivation(trx, {
        licenseKey,
        machineId: "m-in-trx",
      });
      return inside.machineActive;
    });
    expect(seen).toBe(true);
  });

  it("never sees the rows of a transaction still in progress, and waits for it to end", async () => {
    const licenseKey = "SK-UNCOMMITTED-0001";
    let outcome: Promise<string> | undefined;
    let settled = false;
    await expect(
      f.db.transaction().execute(async (trx) => {
        await sql`insert into licenses (id, license_key, product_id, status, max_machines,
          active_machines, features, created_at, updated_at)
          values ('lic_uncommitted', ${licenseKey}, ${f.product.id}, 'ACTIVE', 1, 0, '[]', 0, 0)`.execute(
          trx,
        );
        outcome = requireLicenseByKey(f.db, licenseKey).then(
          () => "found",
          (err: { code?: string }) => String(err.code),
        );
        void outcome.then(() => {
          settled = true;
        });
        // Give a batch every chance to run while the transaction is open. On SQLite the read
        // waits for the connection; on PostgreSQL it runs on another one and cannot see the row.
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(settled).toBe(dialect === "postgres");
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    expect(await outcome).toBe("LICENSE_NOT_FOUND");
  });

  it("fails only the read that fails, not the others in its batch", async () => {
    const licenseKey = await f.createLicense();
    const good = requireLicenseByKey(f.db, licenseKey);
    const bad = readCompiled(f.db, sql`select * from no_such_table`.compile(f.db));
    const alsoGood = requireLicenseByKey(f.db, licenseKey);
    await expect(bad).rejects.toThrow(/no_such_table/);
    await expect(good).resolves.toMatchObject({ maxMachines: 3 });
    await expect(alsoGood).resolves.toMatchObject({ maxMachines: 3 });
  });

  it.runIf(dialect === "sqlite")(
    "refuses a statement that writes instead of running it",
    async () => {
      const before = await f.db.selectFrom("products").select(["id", "name"]).execute();
      await expect(
        readCompiled(f.db, sql`delete from products where 1 = 0`.compile(f.db)),
      ).rejects.toThrow(/read-only/);
      // A write that returns rows is still a write.
      await expect(
        readCompiled(f.db, sql`update products set name = 'CHANGED' returning id`.compile(f.db)),
      ).rejects.toThrow(/read-only/);
      expect(await f.db.selectFrom("products").select(["id", "name"]).execute()).toEqual(before);
    },
  );
});

describe("queries compiled once", () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture("sqlite");
  });
  afterAll(async () => {
    await f.close();
  });

  it("refuse a builder that alters a placeholder instead of passing it through", () => {
    const altered = compileOnce<{ at: number }, unknown>(["at"], (db, p) =>
      db
        .selectFrom("products")
        .selectAll()
        .where("created_at", "=", p.at + 1),
    );
    expect(() => altered(f.db, { at: 1 })).toThrow(/placeholder altered/);
  });

  it("refuse a builder that leaves a parameter unused", () => {
    const unused = compileOnce<{ slug: string; name: string }, unknown>(["slug", "name"], (db, p) =>
      db.selectFrom("products").selectAll().where("slug", "=", p.slug),
    );
    expect(() => unused(f.db, { slug: "x", name: "y" })).toThrow(/name is not used/);
  });

  // SQLite re-prepares a statement each time its bound LIMIT gets a value, which undoes
  // compiling once (docs/performance-history.md, session 9).
  it("refuse a builder that binds LIMIT or OFFSET instead of writing a literal", () => {
    const boundLimit = compileOnce<{ slug: string }, unknown>(["slug"], (db, p) =>
      db.selectFrom("products").selectAll().where("slug", "=", p.slug).limit(1),
    );
    expect(() => boundLimit(f.db, { slug: "x" })).toThrow(/LIMIT and OFFSET must be literals/);
    const boundOffset = compileOnce<{ slug: string }, unknown>(["slug"], (db, p) =>
      db
        .selectFrom("products")
        .selectAll()
        .where("slug", "=", p.slug)
        .limit(sql.lit(1))
        .offset(sql<number>`${2}`),
    );
    expect(() => boundOffset(f.db, { slug: "x" })).toThrow(/LIMIT and OFFSET must be literals/);
    const rawLimit = compileOnce<{ slug: string; count: number }, unknown>(
      ["slug", "count"],
      (db, p) =>
        db
          .selectFrom("products")
          .selectAll()
          .where("slug", "=", p.slug)
          .modifyEnd(sql`limit ${p.count}`),
    );
    expect(() => rawLimit(f.db, { slug: "x", count: 1 })).toThrow(
      /LIMIT and OFFSET must be literals/,
    );
  });

  it("run a builder whose LIMIT and OFFSET are literals", async () => {
    const firstBySlug = compileOnce<{ slug: string }, { slug: string }>(["slug"], (db, p) =>
      db
        .selectFrom("products")
        .select("slug")
        .where("slug", "=", p.slug)
        .limit(sql.lit(1))
        .offset(sql.lit(0)),
    );
    expect(await firstBySlug(f.db, { slug: f.product.slug })).toEqual([{ slug: f.product.slug }]);
  });

  it("run a compiled write in one transaction after another, each with its own values", async () => {
    const rename = compileWriteOnce<{ id: string; name: string }, never>(["id", "name"], (db, p) =>
      db.updateTable("products").set({ name: p.name }).where("id", "=", p.id),
    );
    for (const name of ["First", "Second"]) {
      const result = await f.db
        .transaction()
        .execute((trx) => rename(trx, { id: f.product.id, name }));
      expect(result.numAffectedRows).toBe(1n);
      const row = await f.db
        .selectFrom("products")
        .select("name")
        .where("id", "=", f.product.id)
        .executeTakeFirstOrThrow();
      expect(row.name).toBe(name);
    }
  });
});
