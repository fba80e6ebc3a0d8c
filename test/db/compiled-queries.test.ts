import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileOnce } from "../../src/db/compiled-query.js";
import {
  requireLicenseByKey,
  requireLicenseWithActivation,
} from "../../src/domain/licenses/license-record.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { limits } from "../../src/contracts/vocabulary.js";

// The hot license reads are compiled once (src/db/compiled-query.ts) and, on PostgreSQL, sent as
// named prepared statements: each must answer exactly as a freshly built query would.
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
    // Many reads at once, with machine ids that need quoting: each gets exactly its own answer.
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
    const reads = Array.from({ length: 250 }, (_, i) => {
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
    let settled = false;
    let inserted = (): void => {};
    const insertDone = new Promise<void>((resolve) => (inserted = resolve));
    let reading = (): void => {};
    const readStarted = new Promise<void>((resolve) => (reading = resolve));
    const transaction = f.db.transaction().execute(async (trx) => {
      await sql`insert into licenses (id, license_key, product_id, status, max_machines,
          active_machines, features, created_at, updated_at)
          values ('lic_uncommitted', ${licenseKey}, ${f.product.id}, 'ACTIVE', 1, 0, '[]', 0, 0)`.execute(
        trx,
      );
      inserted();
      await readStarted;
      // On PostgreSQL the read runs on another connection and cannot see the row. On SQLite it
      // waits for the one connection: still waiting after turns in which it could have run.
      if (dialect === "postgres") {
        expect(await outcome).toBe("LICENSE_NOT_FOUND");
      } else {
        for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
        expect(settled).toBe(false);
      }
      throw new Error("roll back");
    });
    await insertDone;
    // Another request's read, made while the transaction is in progress.
    const outcome = requireLicenseByKey(f.db, licenseKey).then(
      () => "found",
      (err: { code?: string }) => String(err.code),
    );
    void outcome.then(() => {
      settled = true;
    });
    reading();
    await expect(transaction).rejects.toThrow("roll back");
    expect(await outcome).toBe("LICENSE_NOT_FOUND");
  });

  it.runIf(dialect === "postgres")(
    "reads of one turn travel together, and one that fails fails alone",
    async () => {
      const licenseKey = await f.createLicense({ maxMachines: 7 });
      // PostgreSQL refuses a NUL in text (the API refuses it earlier): that read fails, the
      // statement it travelled in fails, and the others are answered alone.
      const reads = [licenseKey, "bad\u0000key", licenseKey].map((key) =>
        requireLicenseByKey(f.db, key).then(
          (license) => license.maxMachines,
          (err: { code?: string }) => String(err.code),
        ),
      );
      expect(await Promise.all(reads)).toEqual([7, "22021", 7]);
    },
  );

  it.runIf(dialect === "postgres")(
    "sends the hot queries as named prepared statements, planned once per connection",
    async () => {
      const licenseKey = await f.createLicense();
      // In a transaction, so that every statement runs on the one connection it holds.
      const prepared = await f.db.transaction().execute(async (trx) => {
        await requireLicenseByKey(trx, licenseKey);
        await requireLicenseByKey(trx, licenseKey);
        const { rows } = await sql<{ name: string; statement: string }>`
          select name, statement from pg_prepared_statements`.execute(trx);
        return rows;
      });
      const licenseReads = prepared.filter(
        (row) =>
          row.statement.includes('"licenses"."license_key" = $1') &&
          !row.statement.includes("exists"),
      );
      expect(licenseReads).toHaveLength(1);
      expect(licenseReads[0]?.name).toMatch(/^shipkey_[0-9a-f]{24}$/);
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

  it("refuse a builder whose query depends on a value: a ?? or a ternary on a parameter", () => {
    const defaulted = compileOnce<{ name: string | null }, unknown>(["name"], (db, p) =>
      db
        .selectFrom("products")
        .selectAll()
        .where("name", "=", p.name ?? "unnamed"),
    );
    expect(() => defaulted(f.db, { name: null })).toThrow(/changes with a parameter's value/);
    const branched = compileOnce<{ slug: string | null }, unknown>(["slug"], (db, p) =>
      p.slug === null
        ? db.selectFrom("products").selectAll().where("slug", "is", null)
        : db.selectFrom("products").selectAll().where("slug", "=", p.slug),
    );
    expect(() => branched(f.db, { slug: "x" })).toThrow(/changes with a parameter's value/);
  });

  it("compile a query with a list parameter once per length, each answering with its own values", async () => {
    const bySlugs = compileOnce<{ slugs: readonly string[] }, { slug: string }>(
      ["slugs"],
      (db, p) => db.selectFrom("products").select("slug").where("slug", "in", p.slugs),
      { slugs: 3 },
    );
    const found = async (slugs: string[]) =>
      (await bySlugs(f.db, { slugs })).rows.map((row) => row.slug);
    const slug = f.product.slug;
    expect(await found([slug])).toEqual([slug]);
    expect(await found(["none", slug])).toEqual([slug]);
    expect(await found(["none", "nor-this", slug])).toEqual([slug]);
    expect(await found(["none"])).toEqual([]);
    expect(() => bySlugs(f.db, { slugs: [] })).toThrow(/slugs must hold 1 to 3 values/);
    expect(() => bySlugs(f.db, { slugs: ["a", "b", "c", "d"] })).toThrow(/1 to 3 values/);
  });

  it("refuse a builder that leaves a value of a list unused", async () => {
    const firstOnly = compileOnce<{ slugs: readonly string[] }, unknown>(
      ["slugs"],
      (db, p) => db.selectFrom("products").selectAll().where("slug", "in", p.slugs.slice(0, 1)),
      { slugs: 2 },
    );
    expect((await firstOnly(f.db, { slugs: ["a"] })).rows).toEqual([]);
    expect(() => firstOnly(f.db, { slugs: ["a", "b"] })).toThrow(/slugs is not used/);
  });

  it("run a compiled write in one transaction after another, each with its own values", async () => {
    const rename = compileOnce<{ id: string; name: string }, never>(["id", "name"], (db, p) =>
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
