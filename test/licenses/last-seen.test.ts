import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { batchSize, LastSeenBuffer, lastSeenUpdate } from "../../src/domain/licenses/last-seen.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { type Machine, machinesOf } from "../helpers/machines.js";

describe.each(dialects)("LastSeenBuffer (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => {
    await f.close();
  });

  /** `count` machines activated on a new license, ordered by activation id. */
  async function activateMachines(count: number): Promise<Machine[]> {
    const licenseKey = await f.createLicense({ maxMachines: count });
    for (let i = 0; i < count; i++) {
      await f.post("/api/license/activate", {
        licenseKey,
        machineId: `seen-${licenseKey}-${i}`,
        productSlug: f.product.slug,
      });
    }
    return machinesOf(f.db, licenseKey);
  }

  const lastSeenOf = async (machines: Machine[]) =>
    (
      await f.db
        .selectFrom("activations")
        .select(["id", "last_seen_at"])
        .where(
          "id",
          "in",
          machines.map((m) => m.id),
        )
        .execute()
    )
      .sort((a, b) => a.id.localeCompare(b.id))
      .map((r) => r.last_seen_at);

  const record = (buffer: LastSeenBuffer, machine: Machine | undefined, at: number) =>
    buffer.record(machine?.licenseId ?? "", machine?.machineId ?? "", at);

  // Later than the activations' own last-seen (their activation time): a time only moves forward.
  const t0 = Date.now() + 3_600_000;

  it(`writes each activation's own time, in batches larger than one statement, in one transaction`, async () => {
    const machines = await activateMachines(600);
    const buffer = new LastSeenBuffer();
    machines.forEach((m, i) => record(buffer, m, t0 + i));
    await buffer.flush(f.db);
    expect(buffer.size).toBe(0);
    expect(await lastSeenOf(machines)).toEqual(machines.map((_, i) => t0 + i));
  });

  it(`keeps the latest time when an activation is seen several times`, async () => {
    const machines = await activateMachines(1);
    const buffer = new LastSeenBuffer();
    record(buffer, machines[0], t0 + 5000);
    record(buffer, machines[0], t0 + 9000);
    record(buffer, machines[0], t0 + 7000);
    await buffer.flush(f.db);
    expect(await lastSeenOf(machines)).toEqual([t0 + 9000]);
  });

  it(`never moves last-seen back, and leaves ended activations alone`, async () => {
    const machines = await activateMachines(2);
    const [kept, ended] = machines as [Machine, Machine];
    await f.db
      .updateTable("activations")
      .set({ last_seen_at: t0 })
      .where("id", "=", kept.id)
      .execute();
    await f.db
      .updateTable("activations")
      .set({ deactivated_at: Date.now() })
      .where("id", "=", ended.id)
      .execute();
    const endedBefore = await lastSeenOf([ended]);
    const buffer = new LastSeenBuffer();
    record(buffer, kept, t0 - 1000);
    record(buffer, ended, t0);
    await buffer.flush(f.db);
    expect(await lastSeenOf([kept])).toEqual([t0]);
    expect(await lastSeenOf([ended])).toEqual(endedBefore);
  });

  it(`a flush asked for while one runs writes, after it, what that one did not take`, async () => {
    const machines = await activateMachines(2);
    const buffer = new LastSeenBuffer();
    record(buffer, machines[0], t0 + 1111);
    const running = buffer.flush(f.db);
    // The running flush has taken what was recorded and is writing it.
    await Promise.resolve();
    await Promise.resolve();
    record(buffer, machines[1], t0 + 2222);
    expect(buffer.size).toBe(1);
    await buffer.flush(f.db);
    await running;
    expect(buffer.size).toBe(0);
    expect(await lastSeenOf(machines)).toEqual([t0 + 1111, t0 + 2222]);
  });

  it(`keeps what it could not write for the next flush`, async () => {
    const machines = await activateMachines(1);
    const buffer = new LastSeenBuffer();
    record(buffer, machines[0], t0 + 4242);
    const closed = await import("../helpers/database.js").then((m) => m.openTestDatabase(dialect));
    await closed.database.close();
    await expect(buffer.flush(closed.database.db)).rejects.toThrow();
    await closed.testDatabase.drop();
    expect(buffer.size).toBe(1);
    await buffer.flush(f.db);
    expect(await lastSeenOf(machines)).toEqual([t0 + 4242]);
  });

  const appVersionOf = async (machine: Machine | undefined) =>
    (
      await f.db
        .selectFrom("activations")
        .select("app_version")
        .where("id", "=", machine?.id ?? "")
        .executeTakeFirstOrThrow()
    ).app_version;

  it(`writes the app version with the time: the latest reported wins, none keeps the stored one`, async () => {
    const machines = await activateMachines(3);
    const buffer = new LastSeenBuffer();
    buffer.record(machines[0]?.licenseId ?? "", machines[0]?.machineId ?? "", t0, "1.0.0");
    buffer.record(machines[0]?.licenseId ?? "", machines[0]?.machineId ?? "", t0 + 1, "1.1.0");
    buffer.record(machines[0]?.licenseId ?? "", machines[0]?.machineId ?? "", t0 + 2);
    buffer.record(machines[1]?.licenseId ?? "", machines[1]?.machineId ?? "", t0, "2.0.0-beta.1");
    record(buffer, machines[2], t0);
    await buffer.flush(f.db);
    expect(await appVersionOf(machines[0])).toBe("1.1.0");
    expect(await appVersionOf(machines[1])).toBe("2.0.0-beta.1");
    expect(await appVersionOf(machines[2])).toBeNull();
    // Seen again without a version (an app that no longer reports it): the version stays.
    record(buffer, machines[1], t0 + 10);
    await buffer.flush(f.db);
    expect(await appVersionOf(machines[1])).toBe("2.0.0-beta.1");
    expect(await lastSeenOf([machines[1]].filter((m) => m !== undefined))).toEqual([t0 + 10]);
  });

  it(`keeps a version it could not write, and one reported meanwhile wins`, async () => {
    const machines = await activateMachines(2);
    const buffer = new LastSeenBuffer();
    buffer.record(machines[0]?.licenseId ?? "", machines[0]?.machineId ?? "", t0 + 20, "3.0.0");
    buffer.record(machines[1]?.licenseId ?? "", machines[1]?.machineId ?? "", t0 + 20, "3.0.0");
    const closed = await import("../helpers/database.js").then((m) => m.openTestDatabase(dialect));
    await closed.database.close();
    const failed = buffer.flush(closed.database.db);
    buffer.record(machines[1]?.licenseId ?? "", machines[1]?.machineId ?? "", t0 + 21, "3.0.1");
    await expect(failed).rejects.toThrow();
    await closed.testDatabase.drop();
    await buffer.flush(f.db);
    expect(await appVersionOf(machines[0])).toBe("3.0.0");
    expect(await appVersionOf(machines[1])).toBe("3.0.1");
  });

  /** A database whose writes fail: like a full disk or a lost server, for as long as needed. */
  const withFailingDatabase = async (work: (failing: Fixture["db"]) => Promise<void>) => {
    const { openTestDatabase } = await import("../helpers/database.js");
    const closed = await openTestDatabase(dialect);
    await closed.database.close();
    try {
      await work(closed.database.db);
    } finally {
      await closed.testDatabase.drop();
    }
  };

  it("while writes fail, keeps each machine's latest sighting once, losing none", async () => {
    const machines = await activateMachines(3);
    const dropped: number[] = [];
    const buffer = new LastSeenBuffer({
      maxPending: 10,
      onDropped: (n) => dropped.push(n),
    });
    await withFailingDatabase(async (failing) => {
      for (let i = 0; i < 8; i++) record(buffer, machines[i % 3], t0 + i);
      const failed = buffer.flush(failing);
      // Recorded while the failing flush holds the first 8: together they pass the bound.
      for (let i = 8; i < 16; i++) record(buffer, machines[i % 3], t0 + i);
      await expect(failed).rejects.toThrow();
      expect(buffer.size).toBe(3);
      for (let i = 16; i < 60; i++) {
        record(buffer, machines[i % 3], t0 + i);
        expect(buffer.size).toBeLessThanOrEqual(10);
      }
    });
    expect(dropped).toEqual([]);
    await buffer.flush(f.db);
    expect(await lastSeenOf(machines)).toEqual([t0 + 57, t0 + 58, t0 + 59]);
  });

  it("while writes fail, drops the machines recorded first when more machines wait than the bound", async () => {
    const machines = await activateMachines(30);
    const before = await lastSeenOf(machines);
    let dropped = 0;
    const buffer = new LastSeenBuffer({
      maxPending: 10,
      onDropped: (n) => (dropped += n),
    });
    await withFailingDatabase(async (failing) => {
      machines.forEach((m, i) => {
        record(buffer, m, t0 + i);
        expect(buffer.size).toBeLessThanOrEqual(10);
      });
      await expect(buffer.flush(failing)).rejects.toThrow();
    });
    const waiting = buffer.size;
    expect(dropped).toBe(30 - waiting);
    await buffer.flush(f.db);
    // The newest `waiting` sightings were written; the older machines keep their last-seen.
    expect(await lastSeenOf(machines)).toEqual(
      machines.map((_, i) => (i >= 30 - waiting ? t0 + i : before[i])),
    );
  });

  it.runIf(dialect === "sqlite")(
    "a full batch searches the index once per machine, never scans it, on a large table",
    async () => {
      // Statistics of a table with 1.5 M activations, as ANALYZE leaves them.
      await sql`analyze`.execute(f.db);
      await sql`delete from sqlite_stat1 where tbl = 'activations'`.execute(f.db);
      await sql`insert into sqlite_stat1 (tbl, idx, stat) values
        ('activations', 'activations_one_active_per_machine', '1500000 2 1'),
        ('activations', 'activations_license_idx', '1500000 2'),
        ('activations', 'sqlite_autoindex_activations_1', '1500000 1')`.execute(f.db);
      await sql`analyze sqlite_schema`.execute(f.db);
      const batch = Array.from({ length: batchSize }, (_, i): [string, string, number] => [
        `lic_${i}`,
        `machine-${i}`,
        t0,
      ]);
      const { rows } = await sql<{
        detail: string;
      }>`explain query plan ${lastSeenUpdate(batch)}`.execute(f.db);
      const plan = rows.map((row) => row.detail).join(" | ");
      expect(plan).toContain(
        "SEARCH activations USING INDEX activations_one_active_per_machine (license_id=? AND machine_id=?)",
      );
      expect(plan).not.toMatch(/SCAN activations/);
      await sql`delete from sqlite_stat1`.execute(f.db);
      await sql`analyze sqlite_schema`.execute(f.db);
    },
  );
});
