import { once } from "node:events";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/database.js";
import { migrateTo } from "../../src/db/migrate.js";
import { migrations } from "../../src/db/migrations/index.js";
import { createSession, findSession, verifySignIn } from "../../src/domain/admins/admins.js";
import { activateMachine, deactivateMachine } from "../../src/actions/machines.js";
import { requireProduct } from "../../src/domain/products/products.js";
import { publishRelease } from "../../src/actions/releases.js";
import { testActor } from "../helpers/actions.js";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/database.js";
import { postJson, startServer } from "../helpers/server-process.js";
import { type CliResult, runCli } from "../helpers/cli.js";

/** A PostgreSQL URL as migrate names it: no password, no parameters. */
function withoutPassword(url: string): string {
  const parsed = new URL(url);
  const user = parsed.username === "" ? "" : `${parsed.username}@`;
  return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname}`;
}

describe.each(dialects)("shipkey CLI (%s)", (dialect) => {
  let testDatabase: TestDatabase;
  beforeAll(async () => {
    testDatabase = await createTestDatabase(dialect);
  });
  afterAll(async () => {
    await testDatabase.drop();
  });

  async function cli(...args: string[]): Promise<CliResult> {
    return cliWithInput("", ...args);
  }

  /** Runs the CLI with `input` on its standard input. */
  async function cliWithInput(input: string, ...args: string[]): Promise<CliResult> {
    return runCli(testDatabase.url, args, { input });
  }

  /** Runs with --json and parses stdout, which must be exactly one JSON document. */
  async function json<T = Record<string, unknown>>(...args: string[]): Promise<T> {
    const result = await cli(...args, "--json");
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    return JSON.parse(result.stdout) as T;
  }

  it("migrate works on a fresh database; on SQLite it says on stderr that it creates it, and where", async () => {
    const total = Object.keys(migrations).length;
    const label = dialect === "sqlite" ? testDatabase.url : withoutPassword(testDatabase.url);
    const first = await cli("migrate");
    expect(first.code).toBe(0);
    expect(first.stdout).toBe(`Created and migrated ${label} (${total} migrations).\n`);
    expect(first.stderr).toBe(
      dialect === "sqlite"
        ? `shipkey: creating a new database at ${testDatabase.url.slice("sqlite:".length)} (DATABASE_URL=${testDatabase.url}, run from ${process.cwd()})\n`
        : "",
    );
    expect(await json("migrate")).toEqual({
      migrated: true,
      created: false,
      applied: 0,
      migrations: total,
    });
    expect((await cli("migrate")).stdout).toBe(`Up to date: ${label} (${total} migrations).\n`);
  });

  it("migrate on a database some migrations behind says how many it applied", async () => {
    const behind = await createTestDatabase(dialect);
    try {
      const database = await openDatabase(behind.url);
      const names = Object.keys(migrations);
      try {
        await migrateTo(database.db, names[names.length - 3] ?? "");
      } finally {
        await database.close();
      }
      const result = await runCli(behind.url, ["migrate", "--json"]);
      expect(result).toMatchObject({ code: 0, stderr: "" });
      expect(JSON.parse(result.stdout)).toEqual({
        migrated: true,
        created: false,
        applied: 2,
        migrations: names.length,
      });
    } finally {
      await behind.drop();
    }
  });

  it("prune deletes ended activations past ACTIVATION_HISTORY_DAYS and says how many", async () => {
    expect(await json("prune")).toEqual({
      activations: 0,
      sessions: 0,
      idempotencyKeys: 0,
      certificates: 0,
      webhookDeliveries: 0,
      integrationEventBodies: 0,
      emailMessages: 0,
    });
    const bad = await runCli(testDatabase.url, ["prune"], {
      env: { ACTIVATION_HISTORY_DAYS: "-1" },
    });
    expect(bad).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("ACTIVATION_HISTORY_DAYS"),
    });
  });

  it("products create and list; on SQLite the first key made creates the key file, and says so", async () => {
    const created = await cli(
      "products",
      "create",
      "--slug",
      "cli-app",
      "--name",
      "CLI App",
      "--json",
    );
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ slug: "cli-app", name: "CLI App" });
    expect(created.stderr).toBe(
      dialect === "sqlite"
        ? `shipkey: created the master key file ${testDatabase.url.slice("sqlite:".length)}.master-key: back it up with the database\n`
        : "",
    );
    const list = await json<Array<{ slug: string }>>("products", "list");
    expect(list.map((p) => p.slug)).toContain("cli-app");
  });

  it("products set-offline-allowance and set-deactivation-limit", async () => {
    expect(
      await json("products", "set-offline-allowance", "cli-app", "--machines", "2"),
    ).toMatchObject({ offlineAllowance: 2 });
    expect(
      await json("products", "set-deactivation-limit", "cli-app", "--per-30-days", "3"),
    ).toMatchObject({ maxDeactivationsPer30Days: 3 });
    expect(
      await json("products", "set-deactivation-limit", "cli-app", "--per-30-days", "none"),
    ).toMatchObject({ maxDeactivationsPer30Days: null });
    const license = await json<{ licenseKey: string }>(
      "licenses",
      "create",
      "--product",
      "cli-app",
      "--max-machines",
      "1",
      "--max-deactivations-per-30-days",
      "5",
    );
    expect(license).toMatchObject({ maxDeactivationsPer30Days: 5 });
    expect(
      await json(
        "licenses",
        "update",
        license.licenseKey,
        "--max-deactivations-per-30-days",
        "product",
      ),
    ).toMatchObject({ maxDeactivationsPer30Days: null });
    const missing = await cli("products", "set-offline-allowance", "cli-app");
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("--machines is required");
  });

  it("a duplicate product slug fails on stderr with a non-zero exit", async () => {
    const result = await cli(
      "products",
      "create",
      "--slug",
      "cli-app",
      "--name",
      "Again",
      "--json",
    );
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe("");
    expect(JSON.parse(result.stderr)).toMatchObject({ code: "PRODUCT_SLUG_TAKEN" });
  });

  it("licenses create with every option, generated key", async () => {
    const license = await json(
      "licenses",
      "create",
      "--product",
      "cli-app",
      "--max-machines",
      "3",
      "--status",
      "ACTIVE",
      "--expires-at",
      "2030-01-01T00:00:00Z",
      "--edition",
      "pro",
      "--edition-name",
      "Professional",
      "--features",
      "sync, export",
      "--customer-name",
      "Grace Hopper",
      "--customer-email",
      "grace@example.com",
      "--note",
      "reseller order 7",
      "--external-id",
      "order-7",
    );
    expect(license).toEqual({
      licenseKey: expect.stringMatching(/^[0-9A-Z]{5}(-[0-9A-Z]{5}){4}$/),
      product: "cli-app",
      status: "ACTIVE",
      expiresAt: "2030-01-01T00:00:00.000Z",
      edition: "pro",
      editionName: "Professional",
      features: ["sync", "export"],
      maxMachines: 3,
      activeMachines: 0,
      customerName: "Grace Hopper",
      customerEmail: "grace@example.com",
      note: "reseller order 7",
      externalId: "order-7",
      maxDeactivationsPer30Days: null,
      planId: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
  });

  it("licenses create with a given key; defaults are null, [] and ACTIVE", async () => {
    const license = await json(
      "licenses",
      "create",
      "--product",
      "cli-app",
      "--max-machines",
      "0",
      "--key",
      "GIVEN-LICENSE-KEY-1",
    );
    expect(license).toMatchObject({
      licenseKey: "GIVEN-LICENSE-KEY-1",
      status: "ACTIVE",
      expiresAt: null,
      edition: null,
      editionName: null,
      features: [],
      maxMachines: 0,
    });
  });

  it.each([
    [
      ["licenses", "create", "--product", "cli-app", "--max-machines=-1"],
      "--max-machines must be a non-negative integer",
    ],
    [
      ["licenses", "create", "--product", "cli-app", "--max-machines", "2", "--status", "active"],
      "--status must be one of",
    ],
    [
      [
        "licenses",
        "create",
        "--product",
        "cli-app",
        "--max-machines",
        "2",
        "--expires-at",
        "tomorrow",
      ],
      "--expires-at must be an ISO 8601",
    ],
    [["licenses", "create", "--product", "nope", "--max-machines", "2"], "Product not found"],
    [["licenses", "create", "--product", "cli-app"], "--max-machines is required"],
    [
      ["api-keys", "create", "--name", "x", "--scopes", "releases:writ"],
      'unknown scope "releases:writ"',
    ],
    [["frobnicate"], 'unknown command "frobnicate"'],
    [
      ["licenses", "create", "--product", "cli-app", "--max-machines", "3000000000"],
      "maxMachines must be an integer from 0 to 2147483647",
    ],
    [["products", "create", "--slug", "x", "--bogus"], "Unknown option"],
  ])("rejects %j with a clear message", async (args, message) => {
    const result = await cli(...args);
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(message);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it("licenses update changes only what is given, and --expires-at never clears the expiry", async () => {
    await json(
      "licenses",
      "create",
      "--product",
      "cli-app",
      "--max-machines",
      "1",
      "--key",
      "UPDATE-LICENSE-0001",
      "--expires-at",
      "2031-05-05T05:05:05.005Z",
      "--edition",
      "basic",
    );
    const updated = await json(
      "licenses",
      "update",
      "UPDATE-LICENSE-0001",
      "--status",
      "SUSPENDED",
      "--max-machines",
      "4",
    );
    expect(updated).toMatchObject({
      status: "SUSPENDED",
      maxMachines: 4,
      edition: "basic",
      expiresAt: "2031-05-05T05:05:05.005Z",
    });
    const cleared = await json(
      "licenses",
      "update",
      "UPDATE-LICENSE-0001",
      "--expires-at",
      "never",
      "--features",
      "",
    );
    expect(cleared).toMatchObject({ expiresAt: null, features: [], status: "SUSPENDED" });
  });

  it("licenses update sets --external-id; a second license of the product cannot take it", async () => {
    await json(
      "licenses",
      "create",
      "--product",
      "cli-app",
      "--max-machines",
      "1",
      "--key",
      "EXT-1-0000000000000",
    );
    const updated = await json(
      "licenses",
      "update",
      "EXT-1-0000000000000",
      "--external-id",
      "order-8",
    );
    expect(updated).toMatchObject({ externalId: "order-8" });
    const taken = await cli(
      "licenses",
      "create",
      "--product",
      "cli-app",
      "--max-machines",
      "1",
      "--external-id",
      "order-8",
      "--json",
    );
    expect(taken.code).not.toBe(0);
    expect(JSON.parse(taken.stderr)).toMatchObject({ code: "EXTERNAL_ID_TAKEN" });
  });

  it("an empty --edition or --edition-name is stored and shown as null", async () => {
    await json(
      "licenses",
      "create",
      "--product",
      "cli-app",
      "--max-machines",
      "1",
      "--key",
      "EDITION-LICENSE-0001",
      "--edition",
      "pro",
    );
    const updated = await json(
      "licenses",
      "update",
      "EDITION-LICENSE-0001",
      "--edition",
      "",
      "--edition-name",
      "",
    );
    expect(updated).toMatchObject({ edition: null, editionName: null });
  });

  it("licenses update of an unknown key fails", async () => {
    const result = await cli("licenses", "update", "NOPE-NOPE", "--status", "REVOKED");
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("Invalid license key");
  });

  it("webhooks create shows the secret once; list, deliveries and remove", async () => {
    // PostgreSQL: the secret is sealed under SHIPKEY_MASTER_KEY (SQLite: the key file), the key
    // the servers of these tests start with (helpers/server-process.ts).
    const env: Record<string, string> =
      dialect === "postgres" ? { SHIPKEY_MASTER_KEY: "0123456789abcdef".repeat(4) } : {};
    const hooks = async <T>(...args: string[]) => {
      const result = await runCli(testDatabase.url, ["webhooks", ...args, "--json"], { env });
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      return JSON.parse(result.stdout) as T;
    };
    const created = await hooks<{ id: string; secret: string; events: string[] }>(
      "create",
      "--url",
      "https://crm.example.com/hooks",
      "--events",
      "license.created,activation.refused",
    );
    expect(created.secret).toMatch(/^whsec_/);
    expect(created.events).toEqual(["license.created", "activation.refused"]);
    const list = await runCli(testDatabase.url, ["webhooks", "list"], { env });
    expect(list.stdout).toContain("https://crm.example.com/hooks");
    expect(list.stdout).not.toContain(created.secret);
    expect(await hooks("deliveries", created.id)).toEqual([]);
    const refused = await runCli(
      testDatabase.url,
      ["webhooks", "create", "--url", "http://crm.example.com/", "--events", "license.created"],
      { env },
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("url must be an https URL");
    expect(await hooks("remove", created.id)).toEqual({ deleted: true, id: created.id });
    expect(await hooks("list")).toEqual([]);
  });

  it("webhooks update changes only what it is given; rotate-secret shows the new secret once", async () => {
    const env: Record<string, string> =
      dialect === "postgres" ? { SHIPKEY_MASTER_KEY: "0123456789abcdef".repeat(4) } : {};
    const run = (...args: string[]) => runCli(testDatabase.url, ["webhooks", ...args], { env });
    const hooks = async <T>(...args: string[]) => {
      const result = await run(...args, "--json");
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      return JSON.parse(result.stdout) as T;
    };
    type Endpoint = {
      id: string;
      url: string;
      events: string[];
      products: string[] | null;
      enabled: boolean;
      description: string | null;
      secret?: string;
      previousSecretExpiresAt?: string | null;
    };
    const created = await hooks<Endpoint>(
      "create",
      "--url",
      "https://crm.example.com/hooks",
      "--events",
      "license.created",
      "--description",
      "CRM",
    );

    const nothing = await run("update", created.id);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain("nothing to change");
    const updated = await hooks<Endpoint>(
      "update",
      created.id,
      "--events",
      "machine.activated,machine.deactivated",
      "--enabled",
      "off",
      "--description",
      "",
    );
    expect(updated).toMatchObject({
      url: "https://crm.example.com/hooks",
      events: ["machine.activated", "machine.deactivated"],
      products: null,
      enabled: false,
      description: null,
    });
    expect(await hooks<Endpoint>("update", created.id, "--enabled", "on")).toMatchObject({
      enabled: true,
      events: ["machine.activated", "machine.deactivated"],
    });
    const badSwitch = await run("update", created.id, "--enabled", "yes");
    expect([badSwitch.code, badSwitch.stderr]).toEqual([2, expect.stringContaining("on or off")]);
    const unknown = await run("update", "whe_nope", "--enabled", "on");
    expect(unknown.code).toBe(1);

    const badGrace = await run("rotate-secret", created.id, "--grace-hours", "169");
    expect([badGrace.code, badGrace.stderr]).toEqual([2, expect.stringContaining("0 to 168")]);
    const before = Date.now();
    const rotated = await hooks<Endpoint>("rotate-secret", created.id, "--grace-hours", "48");
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(created.secret);
    const graceEnds = Date.parse(rotated.previousSecretExpiresAt ?? "");
    expect(graceEnds - before).toBeGreaterThanOrEqual(48 * 3_600_000 - 1000);
    expect(graceEnds - before).toBeLessThan(48 * 3_600_000 + 60_000);
    const list = await run("list");
    expect(list.stdout).not.toContain(rotated.secret);
    expect(list.stdout).not.toContain(created.secret);
    await hooks("remove", created.id);
  });

  it("api-keys create shows the secret once; list and revoke never show it", async () => {
    const created = await json<{
      id: string;
      key: string;
      scopes: string[];
      displayPrefix: string;
    }>("api-keys", "create", "--name", "deploy", "--scopes", "releases:write,releases:read");
    expect(created.key).toMatch(/^shk_/);
    expect(created.scopes).toEqual(["releases:write", "releases:read"]);
    const list = await cli("api-keys", "list", "--json");
    expect(list.stdout).not.toContain(created.key);
    expect(JSON.parse(list.stdout)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          id: created.id,
          displayPrefix: created.displayPrefix,
          revokedAt: null,
        }),
      ]),
    );
    const revoked = await json<{ revokedAt: string | null }>("api-keys", "revoke", created.id);
    expect(revoked.revokedAt).toMatch(/Z$/);
    const human = await cli("api-keys", "list");
    expect(human.stdout).not.toContain(created.key);
  });

  it("api-keys create --products limits the key; list shows each key's products (all: none)", async () => {
    await json("products", "create", "--slug", "pipeline-app", "--name", "Pipeline App");
    const created = await json<{ id: string; products: string[] | null }>(
      "api-keys",
      "create",
      "--name",
      "pipeline",
      "--scopes",
      "releases:write",
      "--products",
      "pipeline-app",
    );
    expect(created.products).toEqual(["pipeline-app"]);
    const unknown = await cli(
      "api-keys",
      "create",
      "--name",
      "typo",
      "--scopes",
      "releases:write",
      "--products",
      "pipeline-app,no-such-app",
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('products: no product "no-such-app"');
    const list = await json<Array<{ id: string; products: string[] | null }>>("api-keys", "list");
    expect(list.find((k) => k.id === created.id)?.products).toEqual(["pipeline-app"]);
    expect(list.some((k) => k.products === null)).toBe(true);
    const human = await cli("api-keys", "list");
    expect(human.stdout).toMatch(/products\s+pipeline-app/);
    expect(human.stdout).toMatch(/products\s+all/);
  });

  it("CLI writes are in the audit log as the cli actor, without secrets; a failed one is not", async () => {
    const key = await json<{ id: string; key: string }>(
      "api-keys",
      "create",
      "--name",
      "audited",
      "--scopes",
      "releases:read",
    );
    await json("api-keys", "revoke", key.id);
    const admin = await cli("admins", "create", "--email", "audited@example.com", "--json");
    const password = (JSON.parse(admin.stdout) as { password: string }).password;
    const again = await cli("admins", "create", "--email", "audited@example.com");
    expect(again.code).toBe(1);

    const check = await openDatabase(testDatabase.url);
    try {
      const entries = await check.db
        .selectFrom("audit_log")
        .selectAll()
        .where("target_id", "in", [key.id, "audited@example.com"])
        .orderBy("at")
        .execute();
      expect(entries.map((e) => [e.action, e.actor_type, e.target_id])).toEqual([
        ["api_key.create", "cli", key.id],
        ["api_key.revoke", "cli", key.id],
        ["admin.create", "cli", "audited@example.com"],
      ]);
      expect(entries[0]?.actor_label).toMatch(/.@./);
      const stored = JSON.stringify(entries);
      expect(stored).not.toContain(key.key);
      expect(stored).not.toContain(password);
    } finally {
      await check.close();
    }
  });

  it("admins list, reset-password (ending the admin's sessions) and remove, audited", async () => {
    await json("admins", "create", "--email", "one@example.com");
    await json("admins", "create", "--email", "two@example.com");
    const listed = await json<Array<{ email: string }>>("admins", "list");
    expect(listed.map((a) => a.email)).toEqual(
      expect.arrayContaining(["one@example.com", "two@example.com"]),
    );
    expect(JSON.stringify(listed)).not.toContain("password");

    const check = await openDatabase(testDatabase.url);
    try {
      const one = await check.db
        .selectFrom("admins")
        .select("id")
        .where("email", "=", "one@example.com")
        .executeTakeFirstOrThrow();
      const session = await createSession(check.db, one.id);
      const reset = await cliWithInput(
        "the new password of one\n",
        "admins",
        "reset-password",
        "--email",
        "One@example.com",
        "--password-stdin",
        "--json",
      );
      expect(reset.code).toBe(0);
      expect(JSON.parse(reset.stdout)).toMatchObject({ email: "one@example.com" });
      expect(reset.stdout).not.toContain("the new password of one");
      expect(await findSession(check.db, session.token)).toBeNull();
      expect(
        (await verifySignIn(check.db, "one@example.com", "the new password of one")).admin,
      ).not.toBeNull();

      expect(await json("admins", "remove", "--email", "one@example.com")).toMatchObject({
        email: "one@example.com",
        removed: true,
      });
      const entries = await check.db
        .selectFrom("audit_log")
        .select(["action", "actor_type"])
        .where("target_id", "=", "one@example.com")
        .orderBy("at")
        .execute();
      expect(entries.map((e) => e.action)).toEqual([
        "admin.create",
        "admin.reset_password",
        "admin.remove",
      ]);
      expect(JSON.stringify(entries)).not.toContain("the new password of one");
    } finally {
      await check.close();
    }
  });

  it.each([
    ["reset-password", "ADMIN_NOT_FOUND"],
    ["remove", "ADMIN_NOT_FOUND"],
  ])("admins %s of an unknown email fails with %s", async (action, code) => {
    const result = await cliWithInput(
      "a long enough password\n",
      "admins",
      action,
      "--email",
      "nobody@example.com",
      "--password-stdin",
      "--json",
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(JSON.parse(result.stderr)).toMatchObject({ code });
  });

  it("two concurrent removals of the last two admins leave one (LAST_ADMIN)", async () => {
    const remaining = (await json<Array<{ email: string }>>("admins", "list")).map((a) => a.email);
    // Down to two admins first, then both removed at once by two processes.
    for (const email of remaining.slice(2)) await json("admins", "remove", "--email", email);
    const lastTwo = remaining.slice(0, 2);
    expect(lastTwo).toHaveLength(2);
    const results = await Promise.all(
      lastTwo.map((email) => cli("admins", "remove", "--email", email, "--json")),
    );
    expect(results.map((r) => r.code).sort()).toEqual([0, 1]);
    const refused = results.find((r) => r.code === 1);
    expect(JSON.parse(refused?.stderr ?? "")).toEqual({
      error: "the last admin cannot be removed",
      code: "LAST_ADMIN",
    });
    expect(await json<unknown[]>("admins", "list")).toHaveLength(1);
  });

  it("api-keys revoke of an unknown id fails", async () => {
    const result = await cli("api-keys", "revoke", "key_nothing", "--json");
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stderr)).toMatchObject({ code: "API_KEY_NOT_FOUND" });
  });

  it("changes made with the CLI are seen by a running server on its next request", async () => {
    await json(
      "licenses",
      "create",
      "--product",
      "cli-app",
      "--max-machines",
      "1",
      "--key",
      "LIVE-LICENSE-0001",
    );
    const server = await startServer({ DATABASE_URL: testDatabase.url });
    try {
      const body = { licenseKey: "LIVE-LICENSE-0001", machineId: "desk", productSlug: "cli-app" };
      expect((await postJson(server.baseUrl, "/api/license/activate", body)).status).toBe(200);
      expect((await postJson(server.baseUrl, "/api/license/validate", body)).status).toBe(200);

      const shown = await json<{ machines: Array<{ machineId: string; lastSeenAt: string }> }>(
        "licenses",
        "show",
        "LIVE-LICENSE-0001",
      );
      expect(shown.machines).toEqual([
        expect.objectContaining({ machineId: "desk", lastSeenAt: expect.stringMatching(/Z$/) }),
      ]);

      await json("licenses", "update", "LIVE-LICENSE-0001", "--status", "REVOKED");
      expect((await postJson(server.baseUrl, "/api/license/validate", body)).body.error).toBe(
        "License is suspended/revoked",
      );

      const key = await json<{ key: string; id: string }>(
        "api-keys",
        "create",
        "--name",
        "live",
        "--scopes",
        "releases:write",
      );
      await json("products", "create", "--slug", "live-app", "--name", "Live App");
      const publish = {
        productSlug: "live-app",
        version: "1.0.0",
        channel: "STABLE",
        releases: [{ platform: "LINUX", arch: "X64", downloadUrl: "https://x.example.com/a" }],
      };
      const auth = { authorization: `Bearer ${key.key}` };
      expect((await postJson(server.baseUrl, "/api/releases/publish", publish, auth)).status).toBe(
        200,
      );
      await json("api-keys", "revoke", key.id);
      expect((await postJson(server.baseUrl, "/api/releases/publish", publish, auth)).status).toBe(
        401,
      );
    } finally {
      server.child.kill("SIGTERM");
      await once(server.child, "exit");
    }
  });

  it("human output (without --json) is readable text", async () => {
    const result = await cli("products", "list");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/slug\s+cli-app/);
  });

  it("human output shows control characters in stored values escaped", async () => {
    await json(
      "licenses",
      "create",
      "--product",
      "cli-app",
      "--max-machines",
      "1",
      "--key",
      "ESCAPED-OUTPUT-0001",
    );
    // As an operator's plain SQL or an older version could have stored it.
    const direct = await openDatabase(testDatabase.url);
    try {
      await sql`
        insert into activations
          (id, license_id, machine_id, machine_name, platform, activated_at, last_seen_at)
        select ${"act_escaped"}, id, ${"m\u009b1"}, ${"\u001b[2J\u001b]0;owned\u0007Desk\nstatus  REVOKED"},
          ${"Linux\u2028"}, 0, 0
        from licenses where license_key = ${"ESCAPED-OUTPUT-0001"}`.execute(direct.db);
      await sql`update licenses set active_machines = active_machines + 1
        where license_key = ${"ESCAPED-OUTPUT-0001"}`.execute(direct.db);
    } finally {
      await direct.close();
    }
    const result = await cli("licenses", "show", "ESCAPED-OUTPUT-0001");
    expect(result.code).toBe(0);
    // eslint-disable-next-line no-control-regex -- no control character but the layout's \n
    expect(result.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/);
    expect(result.stdout).toContain(
      "machineName           \\x1b[2J\\x1b]0;owned\\x07Desk\\nstatus  REVOKED",
    );
    expect(result.stdout).toContain("machineId             m\\x9b1");
    expect(result.stdout).toContain("platform              Linux\\u2028");
    // The layout's own line breaks stay.
    expect(result.stdout).toContain("\n\nActive machines:\n");
    // --json output is JSON: the value round-trips unchanged.
    const shown = await json<{ machines: Array<{ machineName: string }> }>(
      "licenses",
      "show",
      "ESCAPED-OUTPUT-0001",
    );
    expect(shown.machines[0]?.machineName).toBe(
      "\u001b[2J\u001b]0;owned\u0007Desk\nstatus  REVOKED",
    );
  });

  it("licenses list filters as the admin API does, pages with --cursor, and prints --json as the page", async () => {
    // Not json(): run alone, this test creates the database (and the key file), which stderr says.
    expect((await cli("products", "create", "--slug", "list-app", "--name", "List App")).code).toBe(
      0,
    );
    const create = (key: string, ...more: string[]) =>
      json(
        "licenses",
        "create",
        "--product",
        "list-app",
        "--max-machines",
        "2",
        "--key",
        key,
        ...more,
      );
    await create(
      "LIST-A-000000000001",
      "--customer-email",
      "grace@example.com",
      "--external-id",
      "order-1",
    );
    await create("LIST-B-000000000002", "--status", "SUSPENDED");
    await create("LIST-C-000000000003", "--expires-at", "2020-01-01T00:00:00Z");
    type Page = { items: Array<{ licenseKey: string }>; nextCursor: string | null };
    const keys = async (...filters: string[]) => {
      const page = await json<Page>("licenses", "list", "--product", "list-app", ...filters);
      return page.items.map((l) => l.licenseKey.slice(0, 6));
    };
    const [all, suspended, expired, unexpired, search, q, external] = await Promise.all([
      keys(),
      keys("--status", "SUSPENDED"),
      keys("--expired", "yes"),
      keys("--expired", "no"),
      keys("--search", "GRACE@"),
      keys("--q", "list-b"),
      keys("--external-id", "order-1"),
    ]);
    expect(all).toEqual(["LIST-C", "LIST-B", "LIST-A"]);
    expect(suspended).toEqual(["LIST-B"]);
    expect(expired).toEqual(["LIST-C"]);
    expect(unexpired).toEqual(["LIST-B", "LIST-A"]);
    expect(search).toEqual(["LIST-A"]);
    expect(q).toEqual(["LIST-B"]);
    expect(external).toEqual(["LIST-A"]);

    const first = await json<Page>("licenses", "list", "--product", "list-app", "--limit", "2");
    expect(first.items.map((l) => l.licenseKey)).toEqual([
      "LIST-C-000000000003",
      "LIST-B-000000000002",
    ]);
    expect(first.nextCursor).toEqual(expect.any(String));
    const cursor = first.nextCursor ?? "";
    const [second, human] = await Promise.all([
      json<Page>("licenses", "list", "--product", "list-app", "--limit", "2", "--cursor", cursor),
      cli("licenses", "list", "--product", "list-app", "--limit", "2"),
    ]);
    expect(second).toMatchObject({
      items: [{ licenseKey: "LIST-A-000000000001" }],
      nextCursor: null,
    });
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(
      /^licenseKey +product +status +expiresAt +machines +customer +externalId\n/,
    );
    expect(human.stdout).toMatch(/^LIST-B-000000000002 +list-app +SUSPENDED +never +0\/2 +- +-$/m);
    expect(human.stdout).toContain(`\n\nMore: add --cursor ${cursor}\n`);
  }, 180_000);

  it.each([
    [["--limit", "0"], '--limit must be from 1 to 200, got "0"'],
    [["--limit", "201"], '--limit must be from 1 to 200, got "201"'],
    [["--expired", "maybe"], "--expired must be yes or no"],
    [["--status", "active"], "--status must be one of ACTIVE, SUSPENDED, REVOKED"],
    [["--search", "a", "--q", "b"], "give --search or --q (the same filter), not both"],
  ])("licenses list %j is a usage error", async (args, message) => {
    expect(await cli("licenses", "list", ...args)).toMatchObject({
      code: 2,
      stdout: "",
      stderr: `shipkey: ${message}\nRun \`shipkey licenses list --help\` for usage.\n`,
    });
  });

  it("licenses update with nothing to change is a usage error naming the options; nothing changes", async () => {
    const before = await json<{ updatedAt: string }>("licenses", "show", "LIST-A-000000000001");
    const result = await cli("licenses", "update", "LIST-A-000000000001");
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe(
      "shipkey: licenses update needs one of --status, --expires-at, --max-machines, --edition, " +
        "--edition-name, --features, --customer-name, --customer-email, --note, --external-id, " +
        "--max-deactivations-per-30-days\nRun `shipkey licenses update --help` for usage.\n",
    );
    const after = await json<{ updatedAt: string }>("licenses", "show", "LIST-A-000000000001");
    expect(after.updatedAt).toBe(before.updatedAt);
  });

  it("licenses show prints past activations one line each: machine, name, dates, who deactivated", async () => {
    const day = (n: number) => Date.parse(`2026-01-0${n}T00:00:00Z`);
    const direct = await openDatabase(testDatabase.url);
    try {
      const license = {
        licenseKey: "LIST-A-000000000001",
        productSlug: "list-app",
        machineName: null,
        platform: null,
      };
      await activateMachine(
        direct.db,
        { ...license, machineId: "pc-1", machineName: "Desk PC" },
        day(1),
      );
      await activateMachine(direct.db, { ...license, machineId: "pc-2" }, day(2));
      await deactivateMachine(
        direct.db,
        { ...license, machineId: "pc-1" },
        { by: "client", now: day(3) },
      );
      // The license allows two machines: pc-3 takes pc-1's place.
      await activateMachine(direct.db, { ...license, machineId: "pc-3" }, day(3));
      await deactivateMachine(
        direct.db,
        { ...license, machineId: "pc-2" },
        { by: "admin", now: day(4) },
      );
    } finally {
      await direct.close();
    }
    const result = await cli("licenses", "show", "LIST-A-000000000001");
    expect(result.code).toBe(0);
    expect(result.stdout).not.toContain("[object Object]");
    expect(result.stdout).toContain("\n\nActive machines:\nmachineId             pc-3\n");
    expect(
      result.stdout.endsWith(
        "\n\nPast activations:\n" +
          "machineId  machineName  activatedAt               deactivatedAt             deactivatedBy\n" +
          "pc-2       -            2026-01-02T00:00:00.000Z  2026-01-04T00:00:00.000Z  admin\n" +
          "pc-1       Desk PC      2026-01-01T00:00:00.000Z  2026-01-03T00:00:00.000Z  client\n",
      ),
    ).toBe(true);
    const shown = await json<{ pastActivations: unknown[] }>(
      "licenses",
      "show",
      "LIST-A-000000000001",
    );
    expect(shown.pastActivations).toEqual([
      expect.objectContaining({ machineId: "pc-2", deactivatedBy: "admin" }),
      expect.objectContaining({
        machineId: "pc-1",
        machineName: "Desk PC",
        deactivatedBy: "client",
      }),
    ]);
    const none = await cli("licenses", "show", "LIST-B-000000000002");
    expect(none.stdout.endsWith("\n\nPast activations:\nNone.\n")).toBe(true);
  });

  it("releases list: versions newest first with channel, yanked state and entries", async () => {
    await json("products", "create", "--slug", "rel-app", "--name", "Release App");
    const direct = await openDatabase(testDatabase.url);
    try {
      const product = await requireProduct(direct.db, "rel-app");
      const entry = (platform: "LINUX" | "WINDOWS") => ({
        platform,
        arch: "X64" as const,
        downloadUrl: `https://cdn.example.com/${platform}`,
        signature: null,
        fileSize: null,
      });
      await publishRelease(direct.db, testActor, product, {
        version: "1.0.0",
        channel: "STABLE",
        releaseNotes: null,
        entries: [entry("LINUX")],
      });
      await publishRelease(direct.db, testActor, product, {
        version: "1.1.0-beta.1",
        channel: "BETA",
        releaseNotes: null,
        entries: [entry("WINDOWS"), entry("LINUX")],
      });
    } finally {
      await direct.close();
    }
    await json("releases", "yank", "--product", "rel-app", "--version", "1.0.0");
    const [listed, human, empty] = await Promise.all([
      json<
        Array<{ version: string; channel: string; yankedAt: string | null; entries: unknown[] }>
      >("releases", "list", "--product", "rel-app"),
      cli("releases", "list", "--product", "rel-app"),
      cli("releases", "list", "--product", "list-app"),
    ]);
    expect(
      listed.map((v) => [v.version, v.channel, v.yankedAt !== null, v.entries.length]),
    ).toEqual([
      ["1.1.0-beta.1", "BETA", false, 2],
      ["1.0.0", "STABLE", true, 1],
    ]);
    expect(human.stdout).toMatch(
      /^version +channel +yanked +rollout +entries\n1\.1\.0-beta\.1 +BETA +no +released +LINUX\/X64 WINDOWS\/X64\n1\.0\.0 +STABLE +\d{4}-\d\d-\d\dT[\d:.]+Z +released +LINUX\/X64\n$/,
    );
    expect(empty).toMatchObject({ code: 0, stdout: "No releases yet.\n" });
    expect(await cli("releases", "list")).toMatchObject({
      code: 2,
      stderr: "shipkey: --product is required\nRun `shipkey releases list --help` for usage.\n",
    });
  }, 120_000);

  it.each([
    [["releases", "list", "--product", "no-such-app"], "no-such-app"],
    [["licenses", "create", "--product", "no-such-app", "--max-machines", "1"], "no-such-app"],
    [["products", "keys", "gone-app"], "gone-app"],
    [["releases", "yank", "--product", "gone-app", "--version", "1.0.0"], "gone-app"],
  ])("%j: Product not found names the slug (exit 1)", async (args, slug) => {
    const human = await cli(...args);
    expect(human).toMatchObject({
      code: 1,
      stdout: "",
      stderr: `shipkey: Product not found: "${slug}"\n`,
    });
    const asJson = await cli(...args, "--json");
    expect(asJson.code).toBe(1);
    expect(JSON.parse(asJson.stderr)).toEqual({
      error: `Product not found: "${slug}"`,
      code: "PRODUCT_NOT_FOUND",
    });
  });
});
