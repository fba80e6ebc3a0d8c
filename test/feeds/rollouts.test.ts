import { UUID } from "builder-util-runtime";
import type { LightMyRequestResponse } from "fastify";
import { AppUpdater } from "electron-updater/out/AppUpdater.js";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { listAudit } from "../../src/domain/audit/audit-log.js";
import { createProduct, type Product } from "../../src/domain/products/products.js";
import { publishRelease } from "../../src/actions/releases.js";
import { testActor } from "../helpers/actions.js";
import {
  changeRollout,
  isOffered,
  machinePosition,
  type Rollout,
  setCritical,
  setRollout,
} from "../../src/domain/releases/rollout.js";
import { sparkleVersion } from "../../src/domain/releases/version.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { type SparkleHost, sparkleChooses, sparkleItems } from "../helpers/sparkle.js";

/** mulberry32: a small seeded generator, so the simulated machines are the same on every run. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const machines = 10_000;
/** 10 % of 10,000 is 1,000 ± 90: three standard deviations of the binomial (√(10,000·0.1·0.9)). */
const tolerance = 90;
const random = seeded(36);
const machineIds = Array.from({ length: machines }, () => `m-${random().toString(36).slice(2)}`);
const stagingIds = Array.from({ length: machines }, () => {
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16)).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
});
const sparkleGroups = Array.from({ length: machines }, () => Math.floor(random() * 2 ** 32) % 7);

/** The key feed-request.ts decides by, for a machine that sends its id. */
const keyOf = (machineId: string) => `machine:${machineId}`;
const rolling = (percent: number): Rollout => ({
  startedAt: 0,
  percent,
  stepHours: null,
  pausedAt: null,
});
const release = (rollout: Rollout | null, critical = false) => ({
  version: "1.1.0",
  critical,
  rollout,
});

/** electron-updater's own isStagingMatch, run on a staging id (nothing of Electron is built). */
async function electronTakes(stagingPercentage: number, stagingId: string): Promise<boolean> {
  const updater = {
    _logger: { info: () => undefined, warn: () => undefined },
    stagingUserIdPromise: { value: Promise.resolve(stagingId) },
  };
  const isStagingMatch = (
    AppUpdater.prototype as unknown as {
      isStagingMatch(this: unknown, info: { stagingPercentage: number }): Promise<boolean>;
    }
  ).isStagingMatch;
  return isStagingMatch.call(updater, { stagingPercentage });
}

describe("the rollout's choice of machines", () => {
  it("offers a version at 10 % to about a tenth of 10,000 machines, the same ones on every check", () => {
    const offered = machineIds.filter((id) =>
      isOffered(release(rolling(10)), { machine: keyOf(id) }, 0),
    );
    expect(Math.abs(offered.length - 1000)).toBeLessThanOrEqual(tolerance);
    const again = machineIds.filter((id) =>
      isOffered(release(rolling(10)), { machine: keyOf(id) }, 0),
    );
    expect(again).toEqual(offered);
  });

  it("only adds machines when the percentage is raised; another version picks other machines", () => {
    const at = (percent: number, version = "1.1.0") =>
      new Set(
        machineIds.filter((id) =>
          isOffered({ ...release(rolling(percent)), version }, { machine: keyOf(id) }, 0),
        ),
      );
    const [ten, fifty] = [at(10), at(50)];
    for (const id of ten) expect(fifty.has(id)).toBe(true);
    expect(Math.abs(fifty.size - 5000)).toBeLessThanOrEqual(150);
    const other = at(10, "1.2.0");
    const both = [...ten].filter((id) => other.has(id)).length;
    expect(both).toBeLessThan(200); // independent: about 1 % of machines, not 10 %
  });

  it("a schedule reaches a seventh more machines each step, from its start", () => {
    const day = 86_400_000;
    const schedule: Rollout = { startedAt: 0, percent: null, stepHours: 24, pausedAt: null };
    const share = (now: number) =>
      machineIds.filter((id) => isOffered(release(schedule), { machine: keyOf(id) }, now)).length;
    expect(Math.abs(share(0) - machines / 7)).toBeLessThanOrEqual(110);
    expect(Math.abs(share(3 * day + 1) - (4 * machines) / 7)).toBeLessThanOrEqual(150);
    expect(share(6 * day)).toBe(machines);
  });

  it("a pause offers the version to no machine, a critical version ignores the share", () => {
    const paused = { ...rolling(50), pausedAt: 1 };
    expect(machineIds.some((id) => isOffered(release(paused), { machine: keyOf(id) }, 2))).toBe(
      false,
    );
    expect(
      machineIds.every((id) => isOffered(release(rolling(1), true), { machine: keyOf(id) }, 0)),
    ).toBe(true);
    expect(isOffered(release(paused, true), { machine: "m" }, 2)).toBe(false);
  });

  it("decides for electron-updater exactly as its isStagingMatch does", async () => {
    let agree = 0;
    let offered = 0;
    for (const id of stagingIds) {
      const share = UUID.parse(id).readUInt32BE(12) / 0xffffffff;
      const ours = isOffered(release(rolling(10)), { stagingShare: share }, 0);
      if ((await electronTakes(10, id)) === ours) agree += 1;
      if (ours) offered += 1;
    }
    expect(agree).toBe(machines);
    expect(Math.abs(offered - 1000)).toBeLessThanOrEqual(tolerance);
  });
});

describe.each(dialects)("phased rollouts in every feed (%s)", (dialect) => {
  let f: Fixture;
  let product: Product;
  /** A machine inside 1.1.0's 10 % and one outside, found from the domain's own choice. */
  let inside: string;
  let outside: string;
  const insideStaging = stagingIds.find((id) => UUID.parse(id).readUInt32BE(12) < 0x0fffffff);
  const outsideStaging = stagingIds.find((id) => UUID.parse(id).readUInt32BE(12) > 0xf0000000);

  beforeAll(async () => {
    f = await createFixture(dialect);
    product = await createProduct(f.db, { slug: "rollout-app", name: "Rollout App" });
    const position = (id: string) => machinePosition(keyOf(id), "1.1.0");
    inside = machineIds.find((id) => position(id) < 0.05) ?? "";
    outside = machineIds.find((id) => position(id) > 0.5) ?? "";
    for (const version of ["1.0.0", "1.1.0"]) await publish(version);
  });
  afterAll(async () => {
    await f?.close();
  });
  beforeEach(async () => {
    // 1.1.0 starts every test rolling to 10 %, not critical.
    await setCritical(f.db, product.slug, "1.1.0", false);
    await setRollout(f.db, product.slug, "1.1.0", { percent: 10 });
    await changeRollout(f.db, product.slug, "1.1.0", "resume");
  });

  const publish = (version: string) =>
    publishRelease(f.db, testActor, product, {
      version,
      channel: "STABLE",
      releaseNotes: null,
      entries: (["WINDOWS", "MACOS", "LINUX"] as const).map((platform) => ({
        platform,
        arch: "X64" as const,
        downloadUrl: `https://cdn.example.com/${version}/app-${platform}.zip`,
        signature: `sig-${version}`,
        fileSize: 10,
        sha512: Buffer.alloc(64, version).toString("base64"),
      })),
    });

  const get = (url: string, headers: Record<string, string> = {}) =>
    f.app.inject({ url: `/api/updates/rollout-app/${url}`, headers });
  const version = (response: LightMyRequestResponse, field = "version") =>
    response.statusCode === 204 ? null : (response.json()[field] as string);

  /** What each server-decided feed offers a machine on `current`. */
  const offers = async (machine: string, current = "0.9.0") => {
    const headers = { "shipkey-machine": machine };
    return [
      version(await get(`tauri/linux/x86_64/${current}`, headers)),
      version(await get(`squirrel-mac/x64/${current}`, headers), "name"),
      version(await get(`latest?platform=LINUX&arch=X64&currentVersion=${current}`, headers)),
      version(
        await get(`latest?platform=LINUX&arch=X64&currentVersion=${current}&machineId=${machine}`),
      ),
    ];
  };
  const admin = (action: string, body?: unknown) =>
    f.app.inject({
      method: "POST",
      url: `/api/admin/products/rollout-app/releases/1.1.0/${action}`,
      headers: { authorization: `Bearer ${f.publishKey}`, "content-type": "application/json" },
      payload: JSON.stringify(body ?? {}),
    });

  it("Tauri, Squirrel.Mac and the generic feed: inside gets the rollout, outside the previous release, every check alike", async () => {
    expect(await offers(inside)).toEqual(Array(4).fill("1.1.0"));
    expect(await offers(inside)).toEqual(Array(4).fill("1.1.0"));
    expect(await offers(outside)).toEqual(Array(4).fill("1.0.0"));
    expect(await offers(outside, "1.0.0")).toEqual(Array(4).fill(null));
    expect(await offers(inside, "1.1.0")).toEqual(Array(4).fill(null));
  });

  it("without a machine id, the client's address decides, the same on every check", async () => {
    const from = (remoteAddress: string) =>
      f.app.inject({
        url: "/api/updates/rollout-app/latest?platform=LINUX&arch=X64&currentVersion=0.9.0",
        remoteAddress,
      });
    const addresses = Array.from({ length: 40 }, (_, i) => `10.0.0.${i + 1}`);
    const first = await Promise.all(addresses.map(async (a) => version(await from(a))));
    const second = await Promise.all(addresses.map(async (a) => version(await from(a))));
    expect(second).toEqual(first);
    expect(first.every((v) => v === "1.0.0" || v === "1.1.0")).toBe(true);
  });

  it("pause halts the version on the next check, resume continues, complete offers it to all (admin API, audited)", async () => {
    const paused = await admin("rollout/pause");
    expect(paused.statusCode, paused.body).toBe(200);
    expect(paused.json()).toMatchObject({
      product: "rollout-app",
      version: "1.1.0",
      critical: false,
      rollout: { state: "paused", percent: 10, stepHours: null },
    });
    expect(await offers(inside)).toEqual(Array(4).fill("1.0.0"));
    expect((await admin("rollout/resume")).json().rollout.state).toBe("rolling");
    expect(await offers(inside)).toEqual(Array(4).fill("1.1.0"));
    expect(await offers(outside)).toEqual(Array(4).fill("1.0.0"));
    const raised = await admin("rollout", { percent: 100 });
    expect(raised.json().rollout).toMatchObject({ state: "rolling", percent: 100 });
    expect(await offers(outside)).toEqual(Array(4).fill("1.1.0"));
    await admin("rollout", { percent: 10 });
    const completed = await admin("rollout/complete");
    expect(completed.json()).toMatchObject({ rollout: null });
    expect(await offers(outside)).toEqual(Array(4).fill("1.1.0"));
    const again = await admin("rollout/pause");
    expect(again.statusCode).toBe(409);
    expect(again.json().code).toBe("NO_ROLLOUT");
    const actions = (await listAudit(f.db, { limit: 10 })).items.map((e) => e.action);
    expect(actions).toEqual(
      expect.arrayContaining([
        "release.rollout_pause",
        "release.rollout_resume",
        "release.rollout",
        "release.rollout_complete",
      ]),
    );
  });

  it("refuses a percentage or schedule out of range, or both at once", async () => {
    for (const body of [
      { percent: 0 },
      { percent: 101 },
      { stepHours: 0 },
      { percent: 5, stepHours: 2 },
      {},
    ]) {
      const response = await admin("rollout", body);
      expect([response.statusCode, response.json().code]).toEqual([400, expect.any(String)]);
    }
  });

  it("a critical version ignores the rollout (not a pause) and says so", async () => {
    const marked = await admin("critical", { critical: true });
    expect(marked.json()).toMatchObject({ critical: true });
    expect(await offers(outside)).toEqual(Array(4).fill("1.1.0"));
    const latest = await get("latest?platform=LINUX&arch=X64&currentVersion=1.0.0", {
      "shipkey-machine": outside,
    });
    expect(latest.json().critical).toBe(true);
    const tauri = await get("tauri/linux/x86_64/1.0.0", { "shipkey-machine": outside });
    expect(tauri.json().critical).toBe(true);
    await admin("rollout/pause");
    expect(await offers(outside)).toEqual(Array(4).fill("1.0.0"));
  });

  describe("electron-updater", () => {
    const yaml = async (stagingId?: string) => {
      const headers: Record<string, string> =
        stagingId === undefined ? {} : { "x-user-staging-id": stagingId };
      const response = await get("electron/latest-linux.yml", headers);
      expect(response.statusCode).toBe(200);
      return parseYaml(response.body) as Record<string, unknown>;
    };

    it("writes stagingPercentage; with the staging id, a machine outside gets the previous release", async () => {
      expect(await yaml()).toMatchObject({ version: "1.1.0", stagingPercentage: 10 });
      expect(await yaml(insideStaging)).toMatchObject({ version: "1.1.0", stagingPercentage: 10 });
      const other = await yaml(outsideStaging);
      expect(other.version).toBe("1.0.0");
      expect(other).not.toHaveProperty("stagingPercentage");
      expect(await electronTakes(10, insideStaging ?? "")).toBe(true);
      expect(await electronTakes(10, outsideStaging ?? "")).toBe(false);
    });

    it("pause: the previous release; critical: no staging, critical: true", async () => {
      await changeRollout(f.db, product.slug, "1.1.0", "pause");
      expect((await yaml(insideStaging)).version).toBe("1.0.0");
      expect((await yaml()).version).toBe("1.0.0");
      await changeRollout(f.db, product.slug, "1.1.0", "resume");
      await setCritical(f.db, product.slug, "1.1.0", true);
      const critical = await yaml(outsideStaging);
      expect(critical).toMatchObject({ version: "1.1.0", critical: true });
      expect(critical).not.toHaveProperty("stagingPercentage");
    });
  });

  describe("Sparkle", () => {
    const items = async () => {
      const response = await get("sparkle/macos/x64/appcast.xml");
      expect(response.statusCode).toBe(200);
      return sparkleItems(response.body);
    };
    const host = (phasedGroup: number | null, now = new Date()): SparkleHost => ({
      version: sparkleVersion("1.0.0"),
      allowedChannels: [],
      phasedGroup,
      now,
    });
    const chosen = async (h: SparkleHost) =>
      sparkleChooses(await items(), h)?.raw["sparkle:shortVersionString"] ?? null;

    it("a percentage is the nearest number of Sparkle's 7 groups (10 %: one group), held over time", async () => {
      const [newest] = await items();
      expect(newest?.phasedRolloutInterval).toBe(86_400);
      const offered = sparkleGroups.filter(
        (group) =>
          sparkleChooses(
            [newest].filter((i) => i !== undefined),
            host(group),
          ) !== null,
      ).length;
      expect(Math.abs(offered - machines / 7)).toBeLessThanOrEqual(110);
      expect(await chosen(host(0))).toBe("1.1.0");
      expect(await chosen(host(1))).toBeNull(); // 1.0.0 is what it has
      const later = new Date(Date.now() + 20 * 3_600_000);
      expect(await chosen(host(1, later))).toBeNull();
      expect(await chosen(host(null))).toBe("1.1.0"); // "Check for Updates…" ignores groups
    });

    it("a schedule is Sparkle's own: group g after g steps", async () => {
      await setRollout(f.db, product.slug, "1.1.0", { stepHours: 24 });
      const [newest] = await items();
      expect(newest?.phasedRolloutInterval).toBe(86_400);
      const start = newest?.date?.getTime() ?? 0;
      expect(Math.abs(start - Date.now())).toBeLessThan(60_000);
      const day = 86_400_000;
      expect(await chosen(host(3, new Date(start + 2 * day)))).toBeNull();
      expect(await chosen(host(3, new Date(start + 3 * day)))).toBe("1.1.0");
    });

    it("pause leaves the item out; critical ignores the groups", async () => {
      await changeRollout(f.db, product.slug, "1.1.0", "pause");
      expect((await items()).map((i) => i.raw["sparkle:shortVersionString"])).toEqual(["1.0.0"]);
      await changeRollout(f.db, product.slug, "1.1.0", "resume");
      await setCritical(f.db, product.slug, "1.1.0", true);
      const [newest] = await items();
      expect(newest).toMatchObject({ criticalUpdate: true });
      expect(newest?.phasedRolloutInterval).toBeUndefined();
      expect(await chosen(host(6))).toBe("1.1.0");
    });
  });

  it("Squirrel.Mac's pub_date has no fraction of a second; Tauri's and the generic feed's are RFC 3339", async () => {
    const headers = { "shipkey-machine": inside };
    const squirrel = (await get("squirrel-mac/x64/0.9.0", headers)).json();
    expect(squirrel.pub_date).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    const tauri = (await get("tauri/linux/x86_64/0.9.0", headers)).json();
    expect(new Date(tauri.pub_date).toISOString()).toBe(tauri.pub_date);
  });
});
