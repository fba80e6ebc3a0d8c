import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { existsSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import type { Database } from "../../src/db/database.js";
import { createProduct } from "../../src/actions/products.js";
import {
  refuseWhileServersRun,
  runningServiceProcesses,
  staleAfterMs,
  startHeartbeat,
} from "../../src/domain/maintenance/service-processes.js";
import {
  decryptPrivateKey,
  generateSigningKey,
  MasterKeyMismatchError,
} from "../../src/domain/signing/key-material.js";
import { opensKeyCheck, readKeyCheck } from "../../src/domain/signing/master-key-check.js";
import { verifyMasterKey } from "../../src/domain/signing/verify-master-key.js";
import { masterKeyFileOf } from "../../src/master-key.js";
import { dialects, openTestDatabase, type TestDatabase } from "../helpers/database.js";
import { runServerToExit, startServer } from "../helpers/server-process.js";
import { runCli } from "../helpers/cli.js";

const cli = { type: "cli", id: null, label: "test", ip: null } as const;
const newKey = () => randomBytes(32);
const hex = (key: Buffer) => key.toString("hex");

describe.each(dialects)("master key check (%s)", (dialect) => {
  let database: Database;
  let testDatabase: TestDatabase;
  beforeAll(async () => {
    ({ database, testDatabase } = await openTestDatabase(dialect));
  });
  afterAll(async () => {
    await database.close();
    await testDatabase.drop();
  });

  /** A fresh database per test (the shared one above serves the in-process checks). */
  async function freshDatabase(): Promise<{ db: Database; url: string }> {
    const fresh = await openTestDatabase(dialect);
    cleanups.push(async () => {
      await fresh.database.close();
      await fresh.testDatabase.drop();
    });
    return { db: fresh.database, url: fresh.testDatabase.url };
  }
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const cleanup of cleanups) await cleanup();
  });

  const counts = async (db: Database) => ({
    products: (await db.db.selectFrom("products").select("id").execute()).length,
    keys: (await db.db.selectFrom("signing_keys").select("kid").execute()).length,
    check: await readKeyCheck(db.db),
  });

  it("the first process to hold the key writes the check value; racing keys: one wins, the other is refused", async () => {
    const { db } = await freshDatabase();
    const [a, b] = [newKey(), newKey()];
    const results = await Promise.allSettled([
      verifyMasterKey(db.db, a),
      verifyMasterKey(db.db, b),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const refused = results.find((r) => r.status === "rejected");
    expect(refused?.reason).toBeInstanceOf(MasterKeyMismatchError);
    const stored = await readKeyCheck(db.db);
    expect(stored).not.toBeNull();
    const winner = results[0]?.status === "fulfilled" ? a : b;
    expect(opensKeyCheck(winner, stored ?? "")).toBe(true);
    await expect(verifyMasterKey(db.db, winner)).resolves.toBeUndefined();
  });

  it("a wrong master key given to the CLI: products create and master-key rotate refuse, and change nothing", async () => {
    const { db, url } = await freshDatabase();
    const [right, wrong, next] = [newKey(), newKey(), newKey()];
    // Only the check value so far (a server started before any product existed).
    await verifyMasterKey(db.db, right);
    const create = (key: Buffer) =>
      runCli(url, ["products", "create", "--slug", "app", "--name", "App"], {
        env: { SHIPKEY_MASTER_KEY: hex(key) },
      });
    const refused = await create(wrong);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /does not decrypt this database's key-check value: it is not the master key this database's signing keys are sealed under \(the master key in use: SHIPKEY_MASTER_KEY\)/,
    );
    const before = await counts(db);
    expect(before).toMatchObject({ products: 0, keys: 0 });

    expect((await create(right)).code).toBe(0);
    const created = await counts(db);
    expect(created).toMatchObject({ products: 1, keys: 1, check: before.check });

    // With a signing key stored, the wrong key is named by the key it cannot open.
    const again = await runCli(url, ["products", "create", "--slug", "b", "--name", "B"], {
      env: { SHIPKEY_MASTER_KEY: hex(wrong) },
    });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/does not decrypt signing key \S+: it is not the master key/);
    const prepareKey = await runCli(url, ["products", "prepare-key", "app"], {
      env: { SHIPKEY_MASTER_KEY: hex(wrong) },
    });
    expect(prepareKey.code).toBe(1);
    const rotate = await runCli(url, ["master-key", "rotate"], {
      env: { SHIPKEY_MASTER_KEY: hex(wrong), SHIPKEY_NEW_MASTER_KEY: hex(next) },
    });
    expect(rotate.code).toBe(1);
    expect(rotate.stderr).toMatch(/does not decrypt/);
    expect(await counts(db)).toEqual(created);
    await expect(verifyMasterKey(db.db, right)).resolves.toBeUndefined();
  });

  it("the server opens every stored key at start: one sealed under another master key stops it, named", async () => {
    const { db, url } = await freshDatabase();
    const [first, other] = [newKey(), newKey()];
    await createProduct(db.db, cli, { slug: "first", name: "First" }, first);
    await createProduct(db.db, cli, { slug: "other", name: "Other" }, other);
    const otherKid = (
      await db.db
        .selectFrom("signing_keys")
        .innerJoin("products", "products.id", "signing_keys.product_id")
        .select("kid")
        .where("products.slug", "=", "other")
        .executeTakeFirstOrThrow()
    ).kid;
    const { code, stderr } = await runServerToExit({
      DATABASE_URL: url,
      SHIPKEY_MASTER_KEY: hex(first),
    });
    expect(code).toBe(1);
    expect(stderr).toContain(`the master key does not decrypt signing key ${otherKid}`);
    expect(stderr).toContain("(the master key in use: SHIPKEY_MASTER_KEY)");
    // Nothing was written under the key that failed.
    expect(await readKeyCheck(db.db)).toBeNull();
    expect(await runningServiceProcesses(db.db)).toEqual([]);
  });

  it("the server refuses to start with a key that does not open the check value", async () => {
    const { db, url } = await freshDatabase();
    await verifyMasterKey(db.db, newKey());
    const { code, stderr } = await runServerToExit({
      DATABASE_URL: url,
      SHIPKEY_MASTER_KEY: hex(newKey()),
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /^shipkey: the master key does not decrypt this database's key-check value/,
    );
  });

  it("an upgraded database (keys, no check value): the check value is written once every key opens", async () => {
    const { db, url } = await freshDatabase();
    const key = newKey();
    await createProduct(db.db, cli, { slug: "app", name: "App" }, key);
    expect(await readKeyCheck(db.db)).toBeNull();
    const rotated = await runCli(url, ["products", "prepare-key", "app"], {
      env: { SHIPKEY_MASTER_KEY: hex(key) },
    });
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(opensKeyCheck(key, (await readKeyCheck(db.db)) ?? "")).toBe(true);
  });

  it("master-key rotate refuses while a server runs, naming its host and pid; works once it stopped", async () => {
    const { db, url } = await freshDatabase();
    const [current, next] = [newKey(), newKey()];
    const env = { SHIPKEY_MASTER_KEY: hex(current) };
    expect(
      (await runCli(url, ["products", "create", "--slug", "app", "--name", "App"], { env })).code,
    ).toBe(0);
    const server = await startServer({ DATABASE_URL: url, ...env });
    try {
      const running = await runningServiceProcesses(db.db);
      expect(running.map((p) => p.pid)).toEqual([server.child.pid]);
      const refused = await runCli(url, ["master-key", "rotate"], {
        env: { ...env, SHIPKEY_NEW_MASTER_KEY: hex(next) },
      });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        `a Shipkey server is using this database (host ${running[0]?.hostname}, pid ${server.child.pid},`,
      );
      expect(refused.stderr).toContain(
        "stop every server, then run shipkey master-key rotate again",
      );
      expect(opensKeyCheck(current, (await readKeyCheck(db.db)) ?? "")).toBe(true);
    } finally {
      server.child.kill("SIGTERM");
      await once(server.child, "exit");
    }
    // A graceful shutdown removes the server's row.
    expect(await runningServiceProcesses(db.db)).toEqual([]);
    const rotated = await runCli(url, ["master-key", "rotate", "--json"], {
      env: { ...env, SHIPKEY_NEW_MASTER_KEY: hex(next) },
    });
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(JSON.parse(rotated.stdout)).toMatchObject({ keys: 1 });
    // The check value moved to the new key in the same transaction.
    const check = (await readKeyCheck(db.db)) ?? "";
    expect(opensKeyCheck(next, check)).toBe(true);
    expect(opensKeyCheck(current, check)).toBe(false);
    await expect(verifyMasterKey(db.db, next)).resolves.toBeUndefined();
  });

  it("heartbeats: fresh rows refuse, stale ones are ignored, stop removes the row", async () => {
    const errors: unknown[] = [];
    const heartbeat = await startHeartbeat(database.db, (err) => errors.push(err), 20);
    await new Promise((resolve) => setTimeout(resolve, 80));
    const [row] = await runningServiceProcesses(database.db);
    expect(row?.pid).toBe(process.pid);
    expect(Date.now() - (row?.heartbeatAt ?? 0)).toBeLessThan(1000);
    await expect(refuseWhileServersRun(database.db, "this")).rejects.toThrow(`pid ${process.pid}`);
    const later = Date.now() + staleAfterMs + 1000;
    expect(await runningServiceProcesses(database.db, later)).toEqual([]);
    await expect(refuseWhileServersRun(database.db, "this", later)).resolves.toBeUndefined();
    await heartbeat.stop();
    expect(await runningServiceProcesses(database.db)).toEqual([]);
    expect(errors).toEqual([]);
  });
});

describe("sealed private keys", () => {
  it("a truncated GCM tag is refused (the tag length is pinned to 16 bytes)", () => {
    const masterKey = randomBytes(32);
    const key = generateSigningKey(masterKey, "prod_1");
    expect(() => decryptPrivateKey(masterKey, "prod_1", key.kid, key.encrypted)).not.toThrow();
    const truncated = Buffer.from(key.encrypted.tag, "base64").subarray(0, 4).toString("base64");
    expect(() =>
      decryptPrivateKey(masterKey, "prod_1", key.kid, { ...key.encrypted, tag: truncated }),
    ).toThrow(MasterKeyMismatchError);
  });
});

describe("master key values", () => {
  const repeated = [
    ["all zero (hex)", "0".repeat(64)],
    ["0xff repeated (hex)", "f".repeat(64)],
    ["0xaa repeated (hex)", "a".repeat(64)],
    ["one byte repeated (base64)", Buffer.alloc(32, 7).toString("base64")],
  ] as const;

  it.each(repeated)("%s: refused with a clear message", (_label, text) => {
    expect(() => loadConfig({ SHIPKEY_MASTER_KEY: text })).toThrow(ConfigError);
    expect(() => loadConfig({ SHIPKEY_MASTER_KEY: text })).toThrow(
      /^SHIPKEY_MASTER_KEY is one byte repeated 32 times \(0x[0-9a-f]{2}\), a placeholder rather than a secret: use 32 random bytes/,
    );
  });

  it("the server, SHIPKEY_NEW_MASTER_KEY and the key file refuse them too", async () => {
    const dir = mkdtempSync(join(tmpdir(), "shipkey-weak-"));
    try {
      const path = join(dir, "shipkey.db");
      const url = `sqlite:${path}`;
      const server = await runServerToExit({
        DATABASE_URL: url,
        SHIPKEY_MASTER_KEY: "0".repeat(64),
      });
      expect(server.code).toBe(1);
      expect(server.stderr).toMatch(/^shipkey: SHIPKEY_MASTER_KEY is one byte repeated 32 times/);

      const env = { SHIPKEY_MASTER_KEY: hex(newKey()) };
      expect(
        (await runCli(url, ["products", "create", "--slug", "a", "--name", "A"], { env })).code,
      ).toBe(0);
      const rotate = await runCli(url, ["master-key", "rotate"], {
        env: { ...env, SHIPKEY_NEW_MASTER_KEY: Buffer.alloc(32).toString("base64") },
      });
      expect(rotate.code).toBe(1);
      expect(rotate.stderr).toMatch(
        /SHIPKEY_NEW_MASTER_KEY is one byte repeated 32 times \(0x00\)/,
      );

      const other = join(dir, "other.db");
      writeFileSync(masterKeyFileOf(other), `${"1".repeat(64)}\n`, { mode: 0o600 });
      const fromFile = await runServerToExit({
        DATABASE_URL: `sqlite:${other}`,
        SHIPKEY_MASTER_KEY: "",
      });
      expect(fromFile.code).toBe(1);
      expect(fromFile.stderr).toContain(
        `the master key file ${masterKeyFileOf(other)} is one byte repeated 32 times (0x11)`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a SQLite backup restored without its key file", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "shipkey-restore-"));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const noKey = { SHIPKEY_MASTER_KEY: "", SHIPKEY_NEW_MASTER_KEY: "" };

  it("signing keys stored: the server and the CLI stop naming the missing file, and write none", async () => {
    const path = join(dir, "keys.db");
    const url = `sqlite:${path}`;
    const file = masterKeyFileOf(path);
    const created = await runCli(url, ["products", "create", "--slug", "app", "--name", "App"], {
      env: noKey,
    });
    expect(created.code, created.stderr).toBe(0);
    expect(existsSync(file)).toBe(true);
    unlinkSync(file);

    const message = `the database holds signing keys sealed under a master key, but the key file ${file} is missing: restore it beside the database, or set SHIPKEY_MASTER_KEY to that key (no new key file was written)`;
    const server = await runServerToExit({ DATABASE_URL: url, ...noKey });
    expect(server.code).toBe(1);
    expect(server.stderr).toBe(`shipkey: ${message}\n`);
    expect(existsSync(file)).toBe(false);
    for (const args of [
      ["products", "create", "--slug", "b", "--name", "B"],
      ["products", "prepare-key", "app"],
      ["master-key", "rotate"],
    ]) {
      const refused = await runCli(url, args, { env: noKey });
      expect(refused.code, args.join(" ")).toBe(1);
      expect(refused.stderr).toBe(`shipkey: ${message}\n`);
      expect(existsSync(file)).toBe(false);
    }
    // Commands that seal nothing still work.
    expect((await runCli(url, ["products", "list"], { env: noKey })).code).toBe(0);
    expect(existsSync(file)).toBe(false);
  });

  it("only a check value stored: the same stop", async () => {
    const path = join(dir, "check.db");
    const url = `sqlite:${path}`;
    const file = masterKeyFileOf(path);
    const server = await startServer({ DATABASE_URL: url, ...noKey });
    server.child.kill("SIGTERM");
    await once(server.child, "exit");
    unlinkSync(file);
    const refused = await runServerToExit({ DATABASE_URL: url, ...noKey });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `the database holds the key-check value of a master key, but the key file ${file} is missing`,
    );
    expect(existsSync(file)).toBe(false);
  });

  it("a fresh database still gets its key file", async () => {
    const path = join(dir, "fresh.db");
    const server = await startServer({ DATABASE_URL: `sqlite:${path}`, ...noKey });
    server.child.kill("SIGTERM");
    await once(server.child, "exit");
    expect(existsSync(masterKeyFileOf(path))).toBe(true);
  });
});
