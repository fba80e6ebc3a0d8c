import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listAudit } from "../../src/domain/audit/audit-log.js";
import { readRollout } from "../../src/domain/releases/rollout.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

describe.each(dialects)("publish into a rollout (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => {
    await f.close();
  });

  const publish = (version: string, extra: Record<string, unknown> = {}) =>
    f.post(
      "/api/releases/publish",
      {
        productSlug: f.product.slug,
        version,
        channel: "STABLE",
        releases: [
          {
            platform: "WINDOWS",
            arch: "X64",
            downloadUrl: `https://dl.example.com/${version}.exe`,
          },
        ],
        ...extra,
      },
      { authorization: `Bearer ${f.publishKey}` },
    );

  it("a publish without rollout or critical answers exactly the spec's fields", async () => {
    const response = await publish("2.0.0");
    expect(response.statusCode).toBe(200);
    expect(Object.keys(response.json()).sort()).toEqual([
      "channel",
      "product",
      "releases",
      "version",
    ]);
    expect((await readRollout(f.db, f.product.slug, "2.0.0")).rollout).toBeNull();
  });

  it("publishes straight into a percentage rollout, critical, and audits both", async () => {
    const response = await publish("2.1.0", { rollout: { percent: 10 }, critical: true });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({
      version: "2.1.0",
      releases: [{ platform: "WINDOWS", arch: "X64", status: "created" }],
      critical: true,
      rollout: { state: "rolling", percent: 10, stepHours: null, pausedAt: null },
    });
    const state = await readRollout(f.db, f.product.slug, "2.1.0");
    expect(state).toMatchObject({ critical: true, rollout: { percent: 10 } });
    const { items } = await listAudit(f.db, { limit: 50 });
    const entry = items.find(
      (item) => item.action === "release.publish" && item.target.id === `${f.product.slug}@2.1.0`,
    );
    expect(entry?.details).toMatchObject({
      rollout: { percent: 10 },
      critical: true,
    });
  });

  it("publishes into a schedule; a republish without rollout keeps it, with one changes it", async () => {
    const scheduled = await publish("2.2.0", { rollout: { stepHours: 24 } });
    expect(scheduled.json()).toMatchObject({
      critical: false,
      rollout: { state: "rolling", percent: 14, stepHours: 24 },
    });
    expect((await publish("2.2.0")).json()).not.toHaveProperty("rollout");
    expect((await readRollout(f.db, f.product.slug, "2.2.0")).rollout).toMatchObject({
      stepHours: 24,
    });
    const raised = await publish("2.2.0", { rollout: { percent: 50 } });
    expect(raised.json()).toMatchObject({ rollout: { percent: 50, stepHours: null } });
    expect((await publish("2.2.0", { critical: false })).json()).toMatchObject({
      critical: false,
      rollout: { percent: 50 },
    });
  });

  it.each([
    [{ rollout: { percent: 0 } }, "rollout.percent", "INVALID_FIELD_VALUE"],
    [{ rollout: { percent: 101 } }, "rollout.percent", "INVALID_FIELD_VALUE"],
    [{ rollout: { percent: 2.5 } }, "rollout.percent", "INVALID_FIELD_VALUE"],
    [{ rollout: { stepHours: 0 } }, "rollout.stepHours", "INVALID_FIELD_VALUE"],
    [{ rollout: { percent: 5, stepHours: 2 } }, "rollout", "INVALID_FIELD_VALUE"],
    [{ rollout: { share: 5 } }, "rollout", "INVALID_FIELD_VALUE"],
    [{ rollout: 10 }, "rollout", "INVALID_FIELD_TYPE"],
    [{ critical: "yes" }, "critical", "INVALID_FIELD_TYPE"],
  ])("refuses %j with 400 naming %s, and writes nothing", async (extra, field, code) => {
    const response = await publish("2.3.0", extra);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code, field });
    await expect(readRollout(f.db, f.product.slug, "2.3.0")).rejects.toMatchObject({
      code: "RELEASE_NOT_FOUND",
    });
  });

  it("the spec's checks come first: a bad channel with a bad rollout is still Invalid channel", async () => {
    const response = await publish("2.3.0", { channel: "NIGHTLY", rollout: { percent: 0 } });
    expect(response.json()).toMatchObject({ error: "Invalid channel" });
  });
});
