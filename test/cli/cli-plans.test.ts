import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Plan } from "../../src/contracts/plans.js";
import { createLicenseFromPlan } from "../../src/actions/plans.js";
import { testActor } from "../helpers/actions.js";
import { type CliResult, runCli } from "../helpers/cli.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

/** `shipkey plans …` on the fixture's database (the CLI's runCli, in-process). */
describe.each(dialects)("shipkey plans (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => {
    await f.close();
  });

  const cli = (...args: string[]): Promise<CliResult> => runCli(f.url, args);
  async function json<T>(...args: string[]): Promise<T> {
    const result = await cli(...args, "--json");
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    return JSON.parse(result.stdout) as T;
  }
  const product = ["--product", "desktop-app"];

  it("plans create takes every setting; plans list shows it", async () => {
    const plan = await json<Plan>(
      "plans",
      "create",
      ...product,
      "--slug",
      "team",
      "--name",
      "Team",
      "--max-machines",
      "5",
      "--edition",
      "team",
      "--edition-name",
      "Team edition",
      "--features",
      "sync,export",
      "--duration-days",
      "30",
      "--updates-window-days",
      "365",
      "--subscription",
      "on",
      "--grace-days",
      "3",
      "--on-refund",
      "suspend",
      "--on-chargeback",
      "revoke",
      "--floating-lease-minutes",
      "15",
    );
    expect(plan).toMatchObject({
      product: "desktop-app",
      slug: "team",
      name: "Team",
      maxMachines: 5,
      edition: "team",
      editionName: "Team edition",
      features: ["sync", "export"],
      durationDays: 30,
      updatesWindowDays: 365,
      subscription: true,
      graceDays: 3,
      onRefund: "suspend",
      onChargeback: "revoke",
      floatingLeaseMinutes: 15,
      archivedAt: null,
    });
    const list = await json<Plan[]>("plans", "list", ...product);
    expect(list.map((p) => p.slug)).toEqual(["team"]);
    const text = await cli("plans", "list", ...product);
    expect(text.stdout).toContain("slug");
    expect(text.stdout).toContain("team");
  });

  it("plans update changes only what is given; none and perpetual clear", async () => {
    await json(
      "plans",
      "create",
      ...product,
      "--slug",
      "pro",
      "--name",
      "Pro",
      "--max-machines",
      "1",
      "--duration-days",
      "365",
      "--floating-lease-minutes",
      "10",
    );
    const updated = await json<Plan>(
      "plans",
      "update",
      "pro",
      ...product,
      "--max-machines",
      "2",
      "--duration-days",
      "perpetual",
      "--floating-lease-minutes",
      "none",
    );
    expect(updated).toMatchObject({
      name: "Pro",
      maxMachines: 2,
      durationDays: null,
      floatingLeaseMinutes: null,
    });
    const none = await cli("plans", "update", "pro", ...product);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("plans update needs a setting");
    const bad = await cli("plans", "update", "pro", ...product, "--on-refund", "refund");
    expect(bad.code).toBe(2);
  });

  it("plans archive and --restore; an archived plan keeps its licenses", async () => {
    const plan = await json<Plan>(
      "plans",
      "create",
      ...product,
      "--slug",
      "old",
      "--name",
      "Old",
      "--max-machines",
      "1",
    );
    await createLicenseFromPlan(f.db, testActor, plan.id);
    const archived = await json<Plan>("plans", "archive", "old", ...product);
    expect(archived.archivedAt).not.toBeNull();
    expect(archived.licenses).toBe(1);
    const restored = await json<Plan>("plans", "archive", "old", ...product, "--restore");
    expect(restored.archivedAt).toBeNull();
    const missing = await cli("plans", "archive", "gone", ...product, "--json");
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stderr)).toMatchObject({ code: "PLAN_NOT_FOUND" });
  });

  it("audits as the CLI's user", async () => {
    const rows = await f.db
      .selectFrom("audit_log")
      .select(["action", "actor_type"])
      .where("target_type", "=", "plan")
      .execute();
    expect(rows.map((r) => r.action)).toEqual(
      expect.arrayContaining(["plan.create", "plan.update", "plan.archive", "plan.unarchive"]),
    );
    expect(new Set(rows.map((r) => r.actor_type))).toEqual(new Set(["cli"]));
  });
});
