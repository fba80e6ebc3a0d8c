import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/database.js";
import { expireMachineLeases } from "../../src/actions/machines.js";
import { leasesEndingWithin } from "../../src/domain/licenses/machine-leases.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

const day = 86_400_000;

describe.each(dialects)("machine leases (%s)", (dialect) => {
  let f: Fixture;
  let apiKey: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ apiKey } = await adminAccess(f, "leases@example.com"));
    // A subscriber to machine.lease_expired: the sweep's events land in the outbox.
    await f.db
      .insertInto("webhook_endpoints")
      .values({
        id: "whe_leases",
        url: "https://hooks.example.com/leases",
        description: null,
        events: JSON.stringify(["machine.lease_expired"]),
        products: null,
        enabled: 1,
        secret_iv: "x",
        secret_ciphertext: "x",
        secret_tag: "x",
        consecutive_failures: 0,
        created_at: 0,
        updated_at: 0,
      })
      .execute();
  });
  afterAll(async () => {
    await f.close();
  });

  const api = (method: "GET" | "PATCH" | "POST", url: string, body?: unknown) =>
    callWithApiKey(f, apiKey, method, url, body);
  // Each test has a product of its own: another test's machines never lapse in its sweeps.
  let slug = "";
  let products = 0;
  const newProduct = async () => {
    slug = `lease-${++products}`;
    const answer = await api("POST", "/api/admin/products", { slug, name: slug });
    expect(answer.statusCode).toBe(201);
  };
  const license = (maxMachines: number) => f.createLicense({ maxMachines, productSlug: slug });
  const activate = (licenseKey: string, machineId: string) =>
    f.post("/api/license/activate", { licenseKey, machineId, productSlug: slug });
  const setLease = async (machineLeaseDays: number | null) => {
    const answer = await api("PATCH", `/api/admin/products/${slug}`, {
      machineLeaseDays,
    });
    expect(answer.statusCode).toBe(200);
    expect(answer.json()).toMatchObject({ machineLeaseDays });
  };
  /** The machine's activation, as the database holds it. */
  const activation = (licenseKey: string, machineId: string) =>
    f.db
      .selectFrom("activations")
      .innerJoin("licenses", "licenses.id", "activations.license_id")
      .select([
        "activations.last_seen_at",
        "activations.deactivated_at",
        "activations.deactivated_by",
        "licenses.active_machines",
      ])
      .where("licenses.license_key", "=", licenseKey)
      .where("activations.machine_id", "=", machineId)
      .orderBy("activations.activated_at", "desc")
      .executeTakeFirstOrThrow();

  it("is off by default, and settable and audited through the admin API", async () => {
    await newProduct();
    const product = await api("GET", `/api/admin/products/${slug}`);
    expect(product.json()).toMatchObject({ machineLeaseDays: null });
    const bad = await api("PATCH", `/api/admin/products/${slug}`, {
      machineLeaseDays: 0,
    });
    expect(bad.statusCode).toBe(400);
    await setLease(30);
    await setLease(null);
    const audit = await f.db
      .selectFrom("audit_log")
      .select("details")
      .where("action", "=", "product.machine_lease")
      .orderBy("at")
      .execute();
    expect(audit.map((row) => JSON.parse(row.details))).toEqual([
      { machineLeaseDays: 30 },
      { machineLeaseDays: null },
    ]);
  });

  it("frees a machine exactly when its lease passes, once, audited with an event", async () => {
    await newProduct();
    await setLease(null);
    const licenseKey = await license(1);
    expect((await activate(licenseKey, "lapsing")).statusCode).toBe(200);
    const seen = (await activation(licenseKey, "lapsing")).last_seen_at;
    // Without a lease nothing is ever freed.
    expect(await expireMachineLeases(f.db, { now: seen + 400 * day })).toEqual({ expired: 0 });
    await setLease(10);
    expect(await expireMachineLeases(f.db, { now: seen + 10 * day - 1 })).toEqual({ expired: 0 });
    expect(await activation(licenseKey, "lapsing")).toMatchObject({ deactivated_at: null });

    const detail = await api("GET", `/api/admin/licenses/${licenseKey}`);
    expect(detail.json()).toMatchObject({
      machineLeaseDays: 10,
      deactivationsLast30Days: 0,
      machines: [
        {
          machineId: "lapsing",
          certificateExpiresAt: null,
          leaseExpiresAt: new Date(seen + 10 * day).toISOString(),
        },
      ],
    });

    expect(await expireMachineLeases(f.db, { now: seen + 10 * day })).toEqual({ expired: 1 });
    expect(await activation(licenseKey, "lapsing")).toMatchObject({
      deactivated_at: seen + 10 * day,
      deactivated_by: "lease",
      active_machines: 0,
    });
    // Idempotent: a second run finds nothing.
    expect(await expireMachineLeases(f.db, { now: seen + 11 * day })).toEqual({ expired: 0 });

    const audit = await f.db
      .selectFrom("audit_log")
      .select(["actor_type", "details"])
      .where("action", "=", "machine.lease_expired")
      .execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]?.actor_type).toBe("service");
    expect(JSON.parse(audit[0]?.details ?? "{}")).toMatchObject({
      machineId: "lapsing",
      reason: "not seen for 10 days",
    });
    const events = await f.db
      .selectFrom("webhook_deliveries")
      .select("payload")
      .where("event_type", "=", "machine.lease_expired")
      .execute();
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0]?.payload ?? "{}")).toMatchObject({
      type: "machine.lease_expired",
      data: { licenseKey, product: slug, machineId: "lapsing", leaseDays: 10 },
    });

    // The lapsed machine is told it is not activated, with a free slot, and may activate again.
    const validate = await f.post("/api/license/validate", {
      licenseKey,
      machineId: "lapsing",
      productSlug: slug,
    });
    expect(validate.statusCode).toBe(403);
    expect(validate.json()).toMatchObject({
      code: "MACHINE_NOT_ACTIVATED",
      error: "Machine not activated",
      canActivate: true,
    });
    expect((await activate(licenseKey, "lapsing")).statusCode).toBe(200);
  });

  it("counts the machines whose lease ends within a window, as the overview shows them", async () => {
    await newProduct();
    await setLease(10);
    const productId = (
      await f.db
        .selectFrom("products")
        .select("id")
        .where("slug", "=", slug)
        .executeTakeFirstOrThrow()
    ).id;
    const licenseKey = await license(2);
    expect((await activate(licenseKey, "soon")).statusCode).toBe(200);
    const seen = (await activation(licenseKey, "soon")).last_seen_at;
    const week = 7 * day;
    // The lease ends at seen + 10 days: inside a 7-day window from day 3 on, not before.
    expect(await leasesEndingWithin(f.db, productId, seen + 3 * day - 1, week)).toBe(0);
    expect(await leasesEndingWithin(f.db, productId, seen + 3 * day, week)).toBe(1);
    await setLease(null);
    expect(await leasesEndingWithin(f.db, productId, seen + 9 * day, week)).toBe(0);
  });

  it("never frees a machine while its certificate covers it", async () => {
    await newProduct();
    await setLease(1);
    const licenseKey = await license(1);
    expect((await activate(licenseKey, "offline")).statusCode).toBe(200);
    const checkout = await f.post("/api/license/checkout", {
      licenseKey,
      machineId: "offline",
      productSlug: slug,
    });
    expect(checkout.statusCode).toBe(200);
    const { expires_at: certificateExpiry } = await f.db
      .selectFrom("license_certificates")
      .innerJoin("licenses", "licenses.id", "license_certificates.license_id")
      .select("license_certificates.expires_at")
      .where("licenses.license_key", "=", licenseKey)
      .executeTakeFirstOrThrow();
    const seen = (await activation(licenseKey, "offline")).last_seen_at;
    expect(certificateExpiry).toBeGreaterThan(seen + day);

    const detail = await api("GET", `/api/admin/licenses/${licenseKey}`);
    expect(detail.json()).toMatchObject({
      machines: [
        {
          certificateExpiresAt: new Date(certificateExpiry).toISOString(),
          leaseExpiresAt: new Date(certificateExpiry).toISOString(),
        },
      ],
    });
    expect(await expireMachineLeases(f.db, { now: seen + day })).toEqual({ expired: 0 });
    expect(await expireMachineLeases(f.db, { now: certificateExpiry - 1 })).toEqual({
      expired: 0,
    });
    expect(await expireMachineLeases(f.db, { now: certificateExpiry })).toEqual({ expired: 1 });
    expect(await activation(licenseKey, "offline")).toMatchObject({ deactivated_by: "lease" });
  });

  it("keeps a machine seen again since, and works through more machines than a batch", async () => {
    await newProduct();
    await setLease(5);
    const licenseKey = await license(10);
    for (const machine of ["a", "b", "c", "d", "e"]) {
      expect((await activate(licenseKey, machine)).statusCode).toBe(200);
    }
    const seen = (await activation(licenseKey, "e")).last_seen_at;
    // "a" was seen later (validate's write is buffered: set it as the flush would).
    await f.db
      .updateTable("activations")
      .set({ last_seen_at: seen + 3 * day })
      .where("machine_id", "=", "a")
      .where("deactivated_at", "is", null)
      .execute();
    const result = await expireMachineLeases(f.db, { now: seen + 6 * day, batchSize: 2 });
    expect(result).toEqual({ expired: 4 });
    expect(await activation(licenseKey, "a")).toMatchObject({
      deactivated_at: null,
      active_machines: 1,
    });
  });

  it("sweeps racing (on PostgreSQL, over two pools) end each machine once", async () => {
    await newProduct();
    await setLease(2);
    const licenseKey = await license(30);
    for (let i = 0; i < 24; i++) {
      expect((await activate(licenseKey, `race-${i}`)).statusCode).toBe(200);
    }
    const seen = (await activation(licenseKey, "race-23")).last_seen_at;
    const other = dialect === "postgres" ? await openDatabase(f.url, { poolSize: 5 }) : null;
    try {
      const handles = [f.db, other?.db ?? f.db];
      const runs = await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          expireMachineLeases(handles[i % 2] ?? f.db, { now: seen + 3 * day, batchSize: 5 }),
        ),
      );
      expect(runs.reduce((sum, run) => sum + run.expired, 0)).toBe(24);
    } finally {
      await other?.close();
    }
    expect(await activation(licenseKey, "race-0")).toMatchObject({ active_machines: 0 });
    const audited = await f.db
      .selectFrom("audit_log")
      .select((eb) => eb.fn.countAll<number | string | bigint>().as("n"))
      .where("action", "=", "machine.lease_expired")
      .where("details", "like", "%race-%")
      .executeTakeFirstOrThrow();
    expect(Number(audited.n)).toBe(24);
  });
});
