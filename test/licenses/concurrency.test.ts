import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { type Database, openDatabase } from "../../src/db/database.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

/**
 * Races requests against the database. On PostgreSQL the requests are spread over two app
 * instances with their own connection pools on one database, as several server processes would
 * be: the limits must hold in the database, not in a process. (SQLite is a single-process store:
 * one connection, transactions serialized by the driver.)
 */
describe.each(dialects)("concurrency (%s)", (dialect) => {
  let f: Fixture;
  let second: { app: FastifyInstance; database: Database } | null = null;
  let apps: FastifyInstance[];

  beforeAll(async () => {
    f = await createFixture(dialect);
    apps = [f.app];
    if (dialect === "postgres") {
      const database = await openDatabase(f.url, { poolSize: 20 });
      second = { app: await buildApp({ database }), database };
      apps.push(second.app);
    }
  });
  afterAll(async () => {
    if (second) {
      await second.app.close();
      await second.database.close();
    }
    await f.close();
  });

  const race = (
    count: number,
    path: string,
    body: (i: number) => unknown,
    headers: Record<string, string> = {},
  ) =>
    Promise.all(
      Array.from({ length: count }, (_, i): Promise<LightMyRequestResponse> => {
        const app = apps[i % apps.length] as FastifyInstance;
        return app.inject({
          method: "POST",
          url: path,
          headers: { "content-type": "application/json", ...headers },
          payload: JSON.stringify(body(i)),
        });
      }),
    );

  /** The license's slot counter and its number of active activation rows, which must agree. */
  const slotsOf = async (licenseKey: string) => {
    const license = await f.db
      .selectFrom("licenses")
      .select("active_machines")
      .where("license_key", "=", licenseKey)
      .executeTakeFirstOrThrow();
    const active = await f.db
      .selectFrom("activations")
      .innerJoin("licenses", "licenses.id", "activations.license_id")
      .select("activations.id")
      .where("licenses.license_key", "=", licenseKey)
      .where("activations.deactivated_at", "is", null)
      .execute();
    return { counter: license.active_machines, activeRows: active.length };
  };

  const countBy = (
    responses: LightMyRequestResponse[],
    pick: (r: LightMyRequestResponse) => string,
  ) =>
    responses.reduce<Record<string, number>>((acc, r) => {
      const key = pick(r);
      acc[key] = (acc[key] ?? 0) + 1;
      return acc;
    }, {});

  it("100 concurrent activations of distinct machines on maxMachines 5: exactly 5 succeed, 95 get 'Maximum machines reached'", async () => {
    const licenseKey = await f.createLicense({ maxMachines: 5 });
    const responses = await race(100, "/api/license/activate", (i) => ({
      licenseKey,
      machineId: `machine-${i}`,
      productSlug: f.product.slug,
    }));
    expect(
      countBy(responses, (r) => `${r.statusCode} ${r.json().message ?? r.json().error}`),
    ).toEqual({
      "200 Machine activated": 5,
      "403 Maximum machines reached": 95,
    });
    const { counter, activeRows } = await slotsOf(licenseKey);
    expect(counter).toBe(5);
    expect(activeRows).toBe(5);
  });

  it("20 concurrent activations of the same machine: one 'Machine activated', 19 'Machine already activated', one activation stored", async () => {
    const licenseKey = await f.createLicense({ maxMachines: 3 });
    const responses = await race(20, "/api/license/activate", () => ({
      licenseKey,
      machineId: "same-machine",
      productSlug: f.product.slug,
    }));
    expect(countBy(responses, (r) => `${r.statusCode} ${r.json().message}`)).toEqual({
      "200 Machine activated": 1,
      "200 Machine already activated": 19,
    });
    const rows = await f.db
      .selectFrom("activations")
      .innerJoin("licenses", "licenses.id", "activations.license_id")
      .select("activations.id")
      .where("licenses.license_key", "=", licenseKey)
      .execute();
    expect(rows).toHaveLength(1);
    const { counter } = await slotsOf(licenseKey);
    expect(counter).toBe(1);
  });

  it("10 concurrent deactivations of one activation: exactly one 200, the slot freed once", async () => {
    const licenseKey = await f.createLicense({ maxMachines: 2 });
    await f.post("/api/license/activate", {
      licenseKey,
      machineId: "a",
      productSlug: f.product.slug,
    });
    await f.post("/api/license/activate", {
      licenseKey,
      machineId: "b",
      productSlug: f.product.slug,
    });
    const responses = await race(10, "/api/license/deactivate", () => ({
      licenseKey,
      machineId: "a",
    }));
    expect(
      countBy(responses, (r) => `${r.statusCode} ${r.json().message ?? r.json().error}`),
    ).toEqual({
      "200 Machine deactivated": 1,
      "404 Machine is not activated": 9,
    });
    const { counter } = await slotsOf(licenseKey);
    expect(counter).toBe(1);
  });

  it("12 concurrent publishes of the same new entry: exactly one 'created', the rest 'updated', never a 5xx", async () => {
    const responses = await race(
      12,
      "/api/releases/publish",
      (i) => ({
        productSlug: f.product.slug,
        version: "20.0.0",
        channel: "STABLE",
        releases: [{ platform: "LINUX", arch: "X64", downloadUrl: `https://x.example.com/${i}` }],
      }),
      { authorization: `Bearer ${f.publishKey}` },
    );
    expect(countBy(responses, (r) => `${r.statusCode} ${r.json().releases?.[0]?.status}`)).toEqual({
      "200 created": 1,
      "200 updated": 11,
    });
    const rows = await f.db
      .selectFrom("release_artifacts")
      .innerJoin("release_versions", "release_versions.id", "release_artifacts.version_id")
      .select("release_artifacts.revision")
      .where("release_versions.version", "=", "20.0.0")
      .execute();
    expect(rows).toEqual([{ revision: 12 }]);
  });

  it("activations racing deactivations of the same machine never give a 5xx", async () => {
    const licenseKey = await f.createLicense({ maxMachines: 1 });
    for (let round = 0; round < 5; round++) {
      const responses = await Promise.all(
        Array.from({ length: 40 }, (_, i) => {
          const app = apps[i % apps.length] as FastifyInstance;
          const path = i % 2 === 0 ? "/api/license/activate" : "/api/license/deactivate";
          return app.inject({
            method: "POST",
            url: path,
            headers: { "content-type": "application/json" },
            payload: JSON.stringify({
              licenseKey,
              machineId: "flapping",
              productSlug: f.product.slug,
            }),
          });
        }),
      );
      expect(responses.filter((r) => r.statusCode >= 500).map((r) => r.body)).toEqual([]);
    }
    const { counter, activeRows } = await slotsOf(licenseKey);
    expect(counter).toBe(activeRows);
  });

  it("mixed activations and deactivations keep the slot counter equal to the active rows", async () => {
    const licenseKey = await f.createLicense({ maxMachines: 4 });
    const responses = await Promise.all(
      Array.from({ length: 60 }, (_, i) => {
        const app = apps[i % apps.length] as FastifyInstance;
        const machineId = `churn-${i % 8}`;
        const path = i % 3 === 2 ? "/api/license/deactivate" : "/api/license/activate";
        return app.inject({
          method: "POST",
          url: path,
          headers: { "content-type": "application/json" },
          payload: JSON.stringify({ licenseKey, machineId, productSlug: f.product.slug }),
        });
      }),
    );
    expect(responses.every((r) => r.statusCode < 500)).toBe(true);
    const { counter, activeRows } = await slotsOf(licenseKey);
    expect(counter).toBe(activeRows);
    expect(activeRows).toBeLessThanOrEqual(4);
    // SQLite's list of active machines on the license row names exactly the active machines.
  });
});
