import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import BetterSqlite3 from "better-sqlite3";
import { type Kysely, sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { openDatabase } from "../../src/db/database.js";
import { markdownToHtml } from "../../src/domain/releases/release-notes-markdown.js";
import { versionSortKey } from "../../src/lib/version-sort-key.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import type { DB } from "../../src/db/schema.js";
import { verifySignIn } from "../../src/domain/admins/admins.js";
import { createTestDatabase, dialects } from "../helpers/database.js";

// Databases made by release 0.1 (schema at 0008, test/fixtures/upgrade/README.md) migrate forward
// without losing a row: licenses, activations active and past, last-seen times, releases, API
// keys, admins, sessions and audit entries.

const fixtures = new URL("../fixtures/upgrade/", import.meta.url).pathname;

const tables = [
  "products",
  "licenses",
  "activations",
  "release_versions",
  "release_artifacts",
  "api_keys",
  "admins",
  "admin_sessions",
  "audit_log",
] as const;

type Snapshot = Record<string, Array<Record<string, unknown>>>;

/**
 * Every row of every table, in a fixed order, without SQLite 0.1's per-license machine list and
 * without license columns added since 0.1 while they are still empty.
 */
async function snapshot(db: Kysely<DB>): Promise<Snapshot> {
  const result: Snapshot = {};
  for (const table of tables) {
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(
      db,
    );
    result[table] = rows
      .map((row) => {
        const copy = { ...row };
        delete copy.active_machine_ids;
        // Columns added since the fixture's version, empty on its rows.
        if (copy.external_id === null) delete copy.external_id;
        if (copy.sha512 === null) delete copy.sha512;
        if (copy.yanked_at === null) delete copy.yanked_at;
        if (copy.tauri_public_key === null) delete copy.tauri_public_key;
        // Off by default (0 on both dialects; the pg driver returns integers as numbers).
        if (copy.updates_require_license === 0) delete copy.updates_require_license;
        if (copy.download_redirects === 0) delete copy.download_redirects;
        if (copy.critical === 0) delete copy.critical;
        if (copy.rollout_started_at === null) delete copy.rollout_started_at;
        if (copy.rollout_percent === null) delete copy.rollout_percent;
        if (copy.rollout_step_hours === null) delete copy.rollout_step_hours;
        if (copy.rollout_paused_at === null) delete copy.rollout_paused_at;
        // Computed from the version by the migration, as publish computes it.
        if (copy.sort_key === versionSortKey(String(copy.version))) delete copy.sort_key;
        // Added with its default (7 days) on every product.
        if (copy.offline_period_seconds === 604_800) delete copy.offline_period_seconds;
        // Added with their defaults: one certificate beyond the slots, no churn limit, and no
        // record of who ended the activations 0.1 ended.
        if (copy.offline_allowance === 1) delete copy.offline_allowance;
        if (copy.max_deactivations_per_30_days === null) delete copy.max_deactivations_per_30_days;
        // No machine lease: machines keep their slots as before.
        if (copy.machine_lease_days === null) delete copy.machine_lease_days;
        if (copy.deactivated_by === null) delete copy.deactivated_by;
        // No app has reported its version yet.
        if (copy.app_version === null) delete copy.app_version;
        // Licenses made before plans come from none, with no updates window.
        if (copy.plan_id === null) delete copy.plan_id;
        if (copy.updates_until === null) delete copy.updates_until;
        // Keys made before product lists may act on every product.
        if (copy.products === null) delete copy.products;
        // Keys made before their creator was recorded take it from their audit entry (checked
        // below).
        if (table === "api_keys") {
          delete copy.created_by_type;
          delete copy.created_by_id;
          delete copy.created_by_label;
        }
        // The notes rendered by the migration, as publish renders them.
        if (
          "release_notes_html" in copy &&
          copy.release_notes_html ===
            (copy.release_notes === null ? null : markdownToHtml(String(copy.release_notes)))
        ) {
          delete copy.release_notes_html;
        }
        return copy;
      })
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  }
  return result;
}

/**
 * What migration 0018 makes of the audit log: an entry about a license names it by its id, the
 * key masked to its last four characters first in its details.
 */
function withoutLicenseKeysInAudit(before: Snapshot): Snapshot {
  const idOfKey = new Map((before.licenses ?? []).map((l) => [l.license_key, l.id]));
  const audit = (before.audit_log ?? []).map((entry) =>
    entry.target_type !== "license"
      ? entry
      : {
          ...entry,
          target_id: idOfKey.get(entry.target_id) ?? entry.target_id,
          details: JSON.stringify({
            licenseKey: `…${String(entry.target_id).slice(-4)}`,
            ...(JSON.parse(String(entry.details)) as object),
          }),
        },
  );
  return {
    ...before,
    audit_log: audit.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
  };
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function copyFixture(...names: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), "shipkey-upgrade-"));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  for (const name of names) copyFileSync(join(fixtures, name), join(dir, name));
  return join(dir, names[0] ?? "");
}

/** Migrates the database at `url` and checks that every row survived and the service uses it. */
async function upgradeAndCheck(url: string): Promise<Snapshot> {
  const database = await openDatabase(url);
  cleanups.push(() => database.close());
  const before = await snapshot(database.db);
  expect(before.licenses).toHaveLength(6);
  expect(before.activations?.filter((a) => a.deactivated_at !== null)).toHaveLength(3);

  const result = await migrateToLatest(database.db);
  expect(result.results?.map((r) => [r.migrationName, r.status])).toEqual([
    ["0009_plain_storage", "Success"],
    ["0010_idempotency_and_retention", "Success"],
    ["0011_update_feeds", "Success"],
    ["0012_tauri_public_key", "Success"],
    ["0013_signing_keys", "Success"],
    ["0014_update_access_and_counts", "Success"],
    ["0015_idempotency_applied", "Success"],
    ["0016_license_integrity", "Success"],
    ["0017_api_key_products", "Success"],
    ["0018_audit_without_license_keys", "Success"],
    ["0019_webhooks", "Success"],
    ["0020_rollouts", "Success"],
    ["0021_machine_leases", "Success"],
    ["0022_daily_counts", "Success"],
    ["0023_machine_app_versions", "Success"],
    ["0024_license_overview_indexes", "Success"],
    ["0025_webhook_url_changes", "Success"],
    ["0026_api_key_creators", "Success"],
    ["0027_release_notes_html", "Success"],
    ["0028_plans", "Success"],
    ["0029_license_plans", "Success"],
    ["0030_email_outbox", "Success"],
    ["0031_email_templates", "Success"],
    ["0032_integrations", "Success"],
    ["0033_integration_events", "Success"],
    ["0034_sales", "Success"],
  ]);
  const after = await snapshot(database.db);
  expect(after).toEqual(withoutLicenseKeysInAudit(before));
  // 0.1's keys were made by the CLI, as their api_key.create entries say.
  const creators = await database.db
    .selectFrom("api_keys")
    .select(["created_by_type", "created_by_label"])
    .execute();
  expect(creators.length).toBeGreaterThan(0);
  for (const creator of creators) {
    expect(creator.created_by_type).toBe("cli");
    expect(creator.created_by_label).toEqual(expect.any(String));
  }

  // The service works on it: a machine activated under 0.1 validates, a past one does not, the
  // admin signs in with the password set under 0.1, and nothing of 0.1's machinery is left.
  const app = await buildApp({ database });
  cleanups.push(() => app.close());
  const validate = (machineId: string) =>
    app.inject({
      method: "POST",
      url: "/api/license/validate",
      payload: { licenseKey: "ACME-PRO-CUSTOM-KEY-0001", machineId, productSlug: "acme-editor" },
    });
  expect((await validate("m-alpha")).json()).toMatchObject({ valid: true, activeMachines: 3 });
  expect((await validate("m-beta")).json()).toMatchObject({ valid: true });
  expect((await validate("m-never")).json()).toMatchObject({ code: "MACHINE_NOT_ACTIVATED" });
  expect(
    (await verifySignIn(database.db, "admin@example.com", "correct horse battery staple")).admin,
  ).not.toBeNull();
  return after;
}

describe.each(dialects)("upgrade from release 0.1 (%s)", (dialect) => {
  it("keeps every row of every table and the service serves them", async () => {
    if (dialect === "sqlite") {
      const path = copyFixture("shipkey-v0.1.db");
      await upgradeAndCheck(`sqlite:${path}`);
      const sqlite = new BetterSqlite3(path, { readonly: true });
      try {
        // SQLite places rows itself again: licenses at 1..n in creation order, no triggers.
        const rowids = sqlite.prepare("select rowid from licenses order by created_at, id").all();
        expect(rowids).toEqual([1, 2, 3, 4, 5, 6].map((rowid) => ({ rowid })));
        expect(
          sqlite.prepare("select name from sqlite_schema where type = 'trigger'").all(),
        ).toEqual([]);
      } finally {
        sqlite.close();
      }
      return;
    }
    const testDatabase = await createTestDatabase("postgres");
    cleanups.push(() => testDatabase.drop());
    await promisify(execFile)("psql", [
      "-q",
      "-v",
      "ON_ERROR_STOP=1",
      "-f",
      join(fixtures, "shipkey-v0.1-postgres.sql"),
      testDatabase.url,
    ]);
    await upgradeAndCheck(testDatabase.url);
  });
});

describe("upgrade from release 0.1 (sqlite, server killed before its last-seen fold)", () => {
  it("applies the last-seen times left in the log file, then removes the file", async () => {
    const path = copyFixture("shipkey-v0.1-unfolded.db", "shipkey-v0.1-unfolded.db-last-seen");
    const logPath = `${path}-last-seen`;
    const log = new BetterSqlite3(logPath, { readonly: true });
    const sightings = log
      .prepare(
        `select license_id, machine_id, max(seen_at) as seen_at from machine_sightings
         group by license_id, machine_id`,
      )
      .all() as Array<{ license_id: string; machine_id: string; seen_at: number }>;
    log.close();
    expect(sightings.length).toBeGreaterThan(0);

    const database = await openDatabase(`sqlite:${path}`);
    cleanups.push(() => database.close());
    const before = await snapshot(database.db);
    await migrateToLatest(database.db);
    const after = await snapshot(database.db);

    // Each active activation moves to the latest time the log held for it, never back; ended
    // activations keep theirs; every other column and table is unchanged.
    const newer = (row: Record<string, unknown>) => {
      const seen = sightings.find(
        (s) => s.license_id === row.license_id && s.machine_id === row.machine_id,
      );
      return row.deactivated_at === null && seen && seen.seen_at > Number(row.last_seen_at)
        ? seen.seen_at
        : row.last_seen_at;
    };
    const expected = before.activations?.map((row) => ({ ...row, last_seen_at: newer(row) }));
    expect(after.activations).toEqual(expected);
    expect(after.activations).not.toEqual(before.activations);
    expect({ ...after, activations: [] }).toEqual({
      ...withoutLicenseKeysInAudit(before),
      activations: [],
    });
    expect(existsSync(logPath)).toBe(false);
  });
});
