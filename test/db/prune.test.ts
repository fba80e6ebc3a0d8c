import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { buildApp } from "../../src/app.js";
import { ConfigError, loadConfig } from "../../src/config.js";
import { createAdmin, createSession } from "../../src/domain/admins/admins.js";
import { idempotencyWindowMs } from "../../src/domain/idempotency/idempotency-keys.js";
import { prune, pruneBatchSize } from "../../src/domain/maintenance/prune.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

const day = 86_400_000;

describe.each(dialects)("pruning old rows (%s)", (dialect) => {
  let f: Fixture;
  let adminId: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    adminId = (await createAdmin(f.db, { email: "prune@example.com", password: "a long password" }))
      .id;
  });
  afterAll(async () => {
    await f.close();
  });

  const licenseId = async (licenseKey: string) =>
    (
      await f.db
        .selectFrom("licenses")
        .select("id")
        .where("license_key", "=", licenseKey)
        .executeTakeFirstOrThrow()
    ).id;
  const count = async (table: "activations" | "admin_sessions" | "idempotency_keys") =>
    Number(
      (
        await f.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );

  /** `n` activations of one license, ended at `endedAt` (null: still active). */
  const addActivations = async (license: string, n: number, endedAt: number | null) => {
    const rows = Array.from({ length: n }, (_, i) => ({
      id: `act_${license}_${String(endedAt)}_${i}`,
      license_id: license,
      machine_id: `m-${String(endedAt)}-${i}`,
      activated_at: 0,
      last_seen_at: 0,
      deactivated_at: endedAt,
    }));
    for (let i = 0; i < rows.length; i += 500) {
      await f.db
        .insertInto("activations")
        .values(rows.slice(i, i + 500))
        .execute();
    }
  };

  it("deletes ended activations past their retention, in batches, and nothing else", async () => {
    const now = 1_000 * day;
    const license = await licenseId(await f.createLicense({ maxMachines: 5 }));
    await addActivations(license, pruneBatchSize * 2 + 5, now - 40 * day);
    await addActivations(license, 3, now - 10 * day);
    await addActivations(license, 2, null);
    const counts = await prune(f.db, { now, activationHistoryMs: 30 * day });
    expect(counts.activations).toBe(pruneBatchSize * 2 + 5);
    const left = await f.db
      .selectFrom("activations")
      .select("deactivated_at")
      .where("license_id", "=", license)
      .execute();
    expect(left.map((a) => a.deactivated_at).sort()).toEqual([
      now - 10 * day,
      now - 10 * day,
      now - 10 * day,
      null,
      null,
    ]);
    // 0 keeps no history; active machines stay.
    await prune(f.db, { now, activationHistoryMs: 0 });
    expect(await count("activations")).toBe(2);
  });

  it("200 activate/deactivate cycles leave no rows once pruned; the license still works", async () => {
    const licenseKey = await f.createLicense({ maxMachines: 1 });
    const body = { licenseKey, productSlug: "desktop-app", machineId: "cycling-machine" };
    for (let i = 0; i < 200; i++) {
      expect((await f.post("/api/license/activate", body)).statusCode).toBe(200);
      expect((await f.post("/api/license/deactivate", body)).statusCode).toBe(200);
    }
    const license = await licenseId(licenseKey);
    const rows = () =>
      f.db.selectFrom("activations").selectAll().where("license_id", "=", license).execute();
    expect(await rows()).toHaveLength(200);
    await prune(f.db, { activationHistoryMs: 0 });
    expect(await rows()).toEqual([]);
    expect((await f.post("/api/license/activate", body)).statusCode).toBe(200);
    expect((await f.post("/api/license/validate", body)).json()).toMatchObject({ valid: true });
  });

  it("deletes expired sessions and idempotency rows older than 24 h", async () => {
    const now = Date.now();
    const live = await createSession(f.db, adminId);
    const expired = await createSession(f.db, adminId);
    await f.db
      .updateTable("admin_sessions")
      .set({ expires_at: now })
      .where("csrf_token", "=", expired.csrfToken)
      .execute();
    const idempotencyRow = (key: string, createdAt: number) => ({
      caller: "api_key:x",
      key,
      fingerprint: "f",
      created_at: createdAt,
    });
    await f.db
      .insertInto("idempotency_keys")
      .values([
        idempotencyRow("old", now - idempotencyWindowMs),
        idempotencyRow("recent", now - idempotencyWindowMs + 1000),
      ])
      .execute();
    const counts = await prune(f.db, { now, activationHistoryMs: 365 * day });
    expect(counts).toMatchObject({ sessions: 1, idempotencyKeys: 1 });
    const sessions = await f.db.selectFrom("admin_sessions").select("csrf_token").execute();
    expect(sessions.map((s) => s.csrf_token)).toEqual([live.csrfToken]);
    const keys = await f.db.selectFrom("idempotency_keys").select("key").execute();
    expect(keys.map((k) => k.key)).toEqual(["recent"]);
  });

  it("deletes sent and failed e-mail past EMAIL_RETENTION_DAYS, never a pending or sending one", async () => {
    const now = Date.now();
    const retention = 90 * day;
    const message = (id: string, state: "pending" | "sending" | "sent" | "failed", at: number) => ({
      id,
      idempotency_key: `prune-${id}`,
      kind: "license_delivered" as const,
      product_id: null,
      license_id: null,
      to_address: "customer@example.com",
      to_name: null,
      subject: "s",
      text_body: "t",
      html_body: "h",
      state,
      attempts: state === "pending" ? 0 : 1,
      next_attempt_at: state === "pending" ? at : null,
      claimed_until: state === "sending" ? now + 60_000 : null,
      last_attempt_at: null,
      last_response_code: null,
      last_response: null,
      message_id: null,
      sent_at: state === "sent" ? at : null,
      created_at: at,
      updated_at: at,
    });
    await f.db
      .insertInto("email_messages")
      .values([
        message("em_old_sent", "sent", now - retention),
        message("em_old_failed", "failed", now - retention - day),
        message("em_recent_sent", "sent", now - retention + 1000),
        message("em_old_pending", "pending", now - retention - day),
        message("em_old_sending", "sending", now - retention - day),
      ])
      .execute();
    const counts = await prune(f.db, {
      now,
      activationHistoryMs: 365 * day,
      emailRetentionMs: retention,
    });
    expect(counts).toMatchObject({ emailMessages: 2 });
    const left = await f.db.selectFrom("email_messages").select("id").orderBy("id").execute();
    expect(left.map((m) => m.id)).toEqual(["em_old_pending", "em_old_sending", "em_recent_sent"]);
  });

  it("the server prunes when it is ready", async () => {
    const expired = await createSession(f.db, adminId);
    await f.db
      .updateTable("admin_sessions")
      .set({ expires_at: Date.now() - 1 })
      .where("csrf_token", "=", expired.csrfToken)
      .execute();
    const app = await buildApp({
      database: f.database,
      pruning: { activationHistoryMs: 365 * day },
    });
    try {
      await app.ready();
      await vi.waitFor(async () => {
        const left = await f.db
          .selectFrom("admin_sessions")
          .select("csrf_token")
          .where("csrf_token", "=", expired.csrfToken)
          .execute();
        expect(left).toEqual([]);
      });
    } finally {
      await app.close();
    }
  });
});

describe("ACTIVATION_HISTORY_DAYS", () => {
  it("defaults to 365 days; 0 keeps no history; anything else is a config error", () => {
    expect(loadConfig({}).activationHistoryMs).toBe(365 * day);
    expect(loadConfig({ ACTIVATION_HISTORY_DAYS: "0" }).activationHistoryMs).toBe(0);
    expect(loadConfig({ ACTIVATION_HISTORY_DAYS: "30" }).activationHistoryMs).toBe(30 * day);
    for (const value of ["-1", "1.5", "36501", "forever"]) {
      expect(() => loadConfig({ ACTIVATION_HISTORY_DAYS: value })).toThrow(ConfigError);
    }
  });
});

describe("EMAIL_RETENTION_DAYS", () => {
  it("defaults to 90 days; 1 to 36500; anything else is a config error", () => {
    expect(loadConfig({}).emailRetentionMs).toBe(90 * day);
    expect(loadConfig({ EMAIL_RETENTION_DAYS: "7" }).emailRetentionMs).toBe(7 * day);
    for (const value of ["0", "-1", "1.5", "36501", "forever"]) {
      expect(() => loadConfig({ EMAIL_RETENTION_DAYS: value })).toThrow(ConfigError);
    }
  });
});
