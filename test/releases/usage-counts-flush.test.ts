import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UsageCounts } from "../../src/domain/releases/usage-counts.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

describe.each(dialects)("usage counts' flush (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => f?.close());

  const checks = async () =>
    (
      await f.db
        .selectFrom("update_checks")
        .select(["current_version", "count"])
        .where("product_id", "=", f.product.id)
        .orderBy("current_version")
        .execute()
    ).map((row) => [row.current_version, Number(row.count)]);

  it("a flush asked for while another runs writes what that one did not take", async () => {
    const counts = new UsageCounts();
    const at = Date.now();
    counts.countCheck(f.product.id, "", "WINDOWS", "STABLE", at);
    const first = counts.flush(f.db);
    // The first flush has taken its counters and is writing them.
    await Promise.resolve();
    await Promise.resolve();
    counts.countCheck(f.product.id, "", "WINDOWS", "STABLE", at);
    counts.countCheck(f.product.id, "", "WINDOWS", "STABLE", at);
    await counts.flush(f.db);
    await first;
    expect(counts.size).toBe(0);
    expect(await checks()).toEqual([["", 3]]);
  });
});
