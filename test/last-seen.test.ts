import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LastSeenBuffer } from "../src/domain/licenses/last-seen.js";
import { dialects } from "./helpers/database.js";
import { createFixture, type Fixture } from "./helpers/fixture.js";

describe.each(dialects)("LastSeenBuffer (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => {
    await f.close();
  });

  async function activateMachines(count: number): Promise<string[]> {
    const licenseKey = await f.createLicense({ maxMachines: count });
    for (let i = 0; i < count; i++) {
      await f.post("/api/license/activate", {
        licenseKey,
        machineId: `seen-${licenseKey}-${i}`,
        productSlug: f.product.slug,
      });
    }
    const rows = await f.db
      .selectFrom("activations")
      .innerJoin("licenses", "licenses.id", "activations.license_id")
      .select("activations.id")
      .where("licenses.license_key", "=", licenseKey)
      .orderBy("activations.machine_id")
      .execute();
    return rows.map((r) => r.id);
  }

  const lastSeenOf = async (ids: string[]) =>
    (
      await f.db
        .selectFrom("activations")
        .select(["id", "last_seen_at"])
        .where("id", "in", ids)
        .execute()
    )
      .sort((a, b) => a.id.localeCompare(b.id))
      .map((r) => r.last_seen_at);

  for (const oneTransaction of [false, true]) {
    const mode = oneTransaction ? "one transaction per flush" : "one commit per statement";
    it(`writes each activation's own time, in batches larger than one statement (${mode})`, async () => {
      const ids = (await activateMachines(450)).sort();
      const buffer = new LastSeenBuffer({ oneTransaction });
      ids.forEach((id, i) => buffer.record(id, 1_000_000 + i));
      await buffer.flush(f.db);
      expect(buffer.size).toBe(0);
      expect(await lastSeenOf(ids)).toEqual(ids.map((_, i) => 1_000_000 + i));
    });

    it(`keeps the latest time when an activation is seen several times (${mode})`, async () => {
      const [id] = await activateMachines(1);
      const buffer = new LastSeenBuffer({ oneTransaction });
      buffer.record(id as string, 5000);
      buffer.record(id as string, 9000);
      buffer.record(id as string, 7000);
      await buffer.flush(f.db);
      expect(await lastSeenOf([id as string])).toEqual([9000]);
    });

    it(`writes what is recorded while a flush runs before that flush resolves (${mode})`, async () => {
      const [first, second] = await activateMachines(2);
      const buffer = new LastSeenBuffer({ oneTransaction });
      buffer.record(first as string, 1111);
      const running = buffer.flush(f.db);
      buffer.record(second as string, 2222);
      const joined = buffer.flush(f.db);
      expect(joined).toBe(running);
      await joined;
      expect(buffer.size).toBe(0);
      expect(await lastSeenOf([first as string, second as string])).toEqual(
        [
          [first, 1111],
          [second, 2222],
        ]
          .sort((a, b) => String(a[0]).localeCompare(String(b[0])))
          .map(([, at]) => at),
      );
    });

    it(`keeps what it could not write for the next flush (${mode})`, async () => {
      const [id] = await activateMachines(1);
      const buffer = new LastSeenBuffer({ oneTransaction });
      buffer.record(id as string, 4242);
      const closed = await import("./helpers/database.js").then((m) => m.openTestDatabase(dialect));
      await closed.database.close();
      await expect(buffer.flush(closed.database.db)).rejects.toThrow();
      await closed.testDatabase.drop();
      expect(buffer.size).toBe(1);
      await buffer.flush(f.db);
      expect(await lastSeenOf([id as string])).toEqual([4242]);
    });
  }
});
