import { createPublicKey, randomBytes, sign, verify } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { buildApp } from "../../src/app.js";
import { ConfigError, loadConfig } from "../../src/config.js";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import * as actions from "../../src/actions/products.js";
import {
  decryptPrivateKey,
  MasterKeyMismatchError,
  parseMasterKey,
} from "../../src/domain/signing/key-material.js";
import {
  assertMasterKeyOpensKeys,
  encryptedOf,
  ensureAllSigningKeys,
  prepareSigningKey,
  promoteSigningKey,
} from "../../src/domain/signing/signing-keys.js";
import { openDatabase } from "../../src/db/database.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import {
  assertMasterKeyConfigured,
  masterKeyFileOf,
  resolveMasterKey,
} from "../../src/master-key.js";
import { callWithApiKey } from "../helpers/admin-access.js";
import type { AdminRoute } from "../helpers/admin-auth-cases.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { runServerToExit } from "../helpers/server-process.js";
import { runCli } from "../helpers/cli.js";
import { apiKeyScopes } from "../../src/contracts/vocabulary.js";

const masterKey = randomBytes(32);
const cli = { type: "cli", id: null, label: "test", ip: null } as const;

interface Jwks {
  keys: Array<{ kid: string }>;
}

describe.each(dialects)("signing keys (%s)", (dialect) => {
  let f: Fixture;
  let admin: string;
  beforeAll(async () => {
    f = await createFixture(dialect, { masterKey });
    admin = (await createApiKey(f.db, { name: "automation", scopes: [...apiKeyScopes] })).key;
  });
  afterAll(async () => {
    await f.close();
  });

  const call = (method: AdminRoute["method"], url: string, body?: unknown) =>
    callWithApiKey(f, admin, method, url, body);
  const jwks = async (app: FastifyInstance = f.app, slug = f.product.slug) =>
    (await app.inject({ url: `/api/products/${slug}/keys` })).json<Jwks>();
  const kidOf = (header: unknown) => /keyid="([^"]+)"/.exec(String(header))?.[1];
  const activatedBody = async () => {
    const licenseKey = await f.createLicense();
    const body = { licenseKey, machineId: "m1", productSlug: f.product.slug };
    await f.post("/api/license/activate", body);
    return body;
  };

  it("every product gets a key at start; a product created through the API has one at once", async () => {
    await ensureAllSigningKeys(f.db, masterKey);
    const count = await f.db
      .selectFrom("signing_keys")
      .select(({ fn }) => fn.countAll<number>().as("n"))
      .where("status", "=", "current")
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(2);
    expect(
      (await call("POST", "/api/admin/products", { slug: "new-app", name: "New" })).statusCode,
    ).toBe(201);
    const row = await f.db
      .selectFrom("signing_keys")
      .innerJoin("products", "products.id", "signing_keys.product_id")
      .select("signing_keys.kid")
      .where("products.slug", "=", "new-app")
      .executeTakeFirst();
    expect(row?.kid).toEqual(expect.any(String));
    // Running again makes nothing new.
    expect(await ensureAllSigningKeys(f.db, masterKey)).toBe(0);
  });

  it("the private key is stored encrypted and never shown", async () => {
    const row = await f.db.selectFrom("signing_keys").selectAll().executeTakeFirstOrThrow();
    expect(row.private_key_ciphertext).not.toContain("PRIVATE");
    const listed = await call("GET", `/api/admin/products/${f.product.slug}/keys`);
    expect(listed.statusCode).toBe(200);
    const text = listed.body;
    expect(text).not.toMatch(/"d"|private|ciphertext/i);
    const [key] = listed.json<{ items: Array<Record<string, unknown>> }>().items;
    expect(key).toMatchObject({ status: "current", retiredAt: null });
    expect(String(key?.pem)).toMatch(/^-----BEGIN PUBLIC KEY-----/);
  });

  it("rotation in two steps: prepare publishes an endorsed next key that signs nothing; promote makes it current; both audited", async () => {
    const nonce = { "shipkey-nonce": "rotation-test-nonce-1" };
    const before = (await jwks()).keys;
    const prepared = await call("POST", `/api/admin/products/${f.product.slug}/keys/prepare`);
    expect(prepared.statusCode).toBe(201);
    const next = prepared.json<{ kid: string; endorsedBy: string }>();
    expect(next.endorsedBy).toBe(before[0]?.kid);
    const listed = (await jwks()).keys as Array<{
      kid: string;
      status: string;
      endorsement?: string;
    }>;
    expect(listed.map((k) => [k.kid, k.status])).toEqual([
      [before[0]?.kid, "current"],
      [next.kid, "next"],
    ]);
    // The endorsement: a JWS by the current key naming the next one.
    const endorsement = listed[1]?.endorsement ?? "";
    const [header, payload] = endorsement
      .split(".")
      .slice(0, 2)
      .map((part) => JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as unknown);
    expect(header).toEqual({
      alg: "EdDSA",
      kid: before[0]?.kid,
      typ: "shipkey-key-endorsement+jwt",
    });
    expect(payload).toMatchObject({
      product: f.product.slug,
      key: { kty: "OKP", crv: "Ed25519", kid: next.kid },
    });
    // Answers are still signed by the current key, and announce the next one.
    const during = await f.post("/api/license/validate", await activatedBody(), nonce);
    expect(kidOf(during.headers["shipkey-signature"])).toBe(before[0]?.kid);
    expect(during.headers["shipkey-key-endorsements"]).toBe(endorsement);
    // One next key at a time.
    const again = await call("POST", `/api/admin/products/${f.product.slug}/keys/prepare`);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ code: "SIGNING_KEY_NEXT_EXISTS" });
    // Younger than the offline period (7 days): refused unless forced.
    const early = await call("POST", `/api/admin/products/${f.product.slug}/keys/promote`);
    expect(early.statusCode).toBe(409);
    expect(early.json()).toMatchObject({ code: "SIGNING_KEY_TOO_NEW" });
    expect(early.json<{ error: string }>().error).toMatch(/Promote after \d{4}-/);
    const promoted = await call("POST", `/api/admin/products/${f.product.slug}/keys/promote`, {
      force: true,
    });
    expect(promoted.statusCode).toBe(200);
    expect(promoted.json()).toMatchObject({
      kid: next.kid,
      retiredKid: before[0]?.kid,
      forced: true,
    });
    expect((await jwks()).keys.map((k) => k.kid)).toEqual([next.kid, before[0]?.kid]);
    // This process signs with the new key at once, and still names its endorsement.
    const answer = await f.post("/api/license/validate", await activatedBody(), nonce);
    expect(kidOf(answer.headers["shipkey-signature"])).toBe(next.kid);
    expect(answer.headers["shipkey-key-endorsements"]).toBe(endorsement);
    const nothing = await call("POST", `/api/admin/products/${f.product.slug}/keys/promote`);
    expect(nothing.statusCode).toBe(409);
    expect(nothing.json()).toMatchObject({ code: "NO_NEXT_SIGNING_KEY" });
    const audit = await f.db
      .selectFrom("audit_log")
      .select(["action", "target_id", "details"])
      .where("action", "in", ["product.key_prepare", "product.key_promote"])
      .orderBy("at")
      .execute();
    expect(audit.map((entry) => [entry.action, JSON.parse(entry.details)])).toEqual([
      ["product.key_prepare", { kid: next.kid, endorsedBy: before[0]?.kid }],
      ["product.key_promote", { kid: next.kid, retiredKid: before[0]?.kid, forced: true }],
    ]);
  });

  it("promote without force once the offline period has passed", async () => {
    const slug = f.otherProduct.slug;
    await call("PATCH", `/api/admin/products/${slug}`, { offlinePeriodSeconds: 60 });
    const { kid } = await actions.prepareSigningKey(f.db, cli, masterKey, slug);
    const later = Date.now() + 61_000;
    const promotion = await f.db.transaction().execute(async (trx) => {
      const { promoteSigningKey } = await import("../../src/domain/signing/signing-keys.js");
      return promoteSigningKey(trx, slug, { now: later });
    });
    expect(promotion).toMatchObject({ kid, forced: false });
  });

  it("a rotation through the domain functions alone: the next answer is signed with the new key", async () => {
    // A clock that never moves: no refresh window passes, nothing but the rotation is at work.
    const second = await buildApp({ database: f.database, masterKey, keyClock: () => 0 });
    try {
      const body = await activatedBody();
      const validate = async () =>
        (
          await second.inject({
            method: "POST",
            url: "/api/license/validate",
            headers: {
              "content-type": "application/json",
              "shipkey-nonce": "domain-rotation-nonce",
            },
            payload: JSON.stringify(body),
          })
        ).headers;
      const oldKid = kidOf((await validate())["shipkey-signature"]);
      expect(oldKid).toBeDefined();
      const prepared = await f.db
        .transaction()
        .execute((trx) => prepareSigningKey(trx, masterKey, f.product.slug));
      const { endorsement } = await f.db
        .selectFrom("signing_keys")
        .select("endorsement")
        .where("kid", "=", prepared.kid)
        .executeTakeFirstOrThrow();
      // Still signed by the current key, and announcing the next one.
      const announced = await validate();
      expect(kidOf(announced["shipkey-signature"])).toBe(oldKid);
      expect(String(announced["shipkey-key-endorsements"]).split(", ")).toContain(endorsement);
      await f.db
        .transaction()
        .execute((trx) => promoteSigningKey(trx, f.product.slug, { force: true }));
      expect(prepared.kid).not.toBe(oldKid);
      expect(kidOf((await validate())["shipkey-signature"])).toBe(prepared.kid);
    } finally {
      await second.close();
    }
  });

  it("another process's promotion (the CLI) is used within the refresh window", async () => {
    let clock = Date.now();
    const second = await buildApp({
      database: f.database,
      masterKey,
      keyRefreshMs: 200,
      keyClock: () => clock,
    });
    try {
      const body = await activatedBody();
      const validate = () =>
        second.inject({
          method: "POST",
          url: "/api/license/validate",
          headers: { "content-type": "application/json", "shipkey-nonce": "another-process-nonce" },
          payload: JSON.stringify(body),
        });
      const oldKid = kidOf((await validate()).headers["shipkey-signature"]);
      // A second copy of the domain modules stands for another process: the key changes it
      // makes are not counted in this one.
      vi.resetModules();
      const otherProcess = await import("../../src/actions/products.js");
      const { kid } = await otherProcess.prepareSigningKey(f.db, cli, masterKey, f.product.slug);
      await otherProcess.promoteSigningKey(f.db, cli, f.product.slug, { force: true });
      expect(kid).not.toBe(oldKid);
      clock += 199;
      expect(kidOf((await validate()).headers["shipkey-signature"])).toBe(oldKid);
      clock += 1;
      expect(kidOf((await validate()).headers["shipkey-signature"])).toBe(kid);
    } finally {
      await second.close();
    }
  });

  it("a retired key can be removed; the current one cannot", async () => {
    const [current, retired] = (await jwks()).keys;
    const refused = await call(
      "DELETE",
      `/api/admin/products/${f.product.slug}/keys/${current?.kid}`,
    );
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: "SIGNING_KEY_CURRENT" });
    const removed = await call(
      "DELETE",
      `/api/admin/products/${f.product.slug}/keys/${retired?.kid}`,
    );
    expect(removed.statusCode).toBe(200);
    expect(removed.json()).toEqual({ deleted: true, kid: retired?.kid });
    expect((await jwks()).keys.map((k) => k.kid)).not.toContain(retired?.kid);
    const missing = await call(
      "DELETE",
      `/api/admin/products/${f.product.slug}/keys/${retired?.kid}`,
    );
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ code: "SIGNING_KEY_NOT_FOUND" });
    // Another product's key is not this product's to remove.
    const other = (await jwks(f.app, f.otherProduct.slug)).keys[0]?.kid;
    expect(
      (await call("DELETE", `/api/admin/products/${f.product.slug}/keys/${other}`)).statusCode,
    ).toBe(404);
  });

  it("the offline period is set per product, from 60 s to 90 days", async () => {
    const url = `/api/admin/products/${f.otherProduct.slug}`;
    const set = await call("PATCH", url, { offlinePeriodSeconds: 3 * 86_400 });
    expect(set.statusCode).toBe(200);
    expect(set.json()).toMatchObject({ offlinePeriodSeconds: 3 * 86_400 });
    for (const offlinePeriodSeconds of [59, 90 * 86_400 + 1, "3600"]) {
      expect((await call("PATCH", url, { offlinePeriodSeconds })).statusCode).toBe(400);
    }
    expect((await call("PATCH", url, {})).statusCode).toBe(400);
  });

  it("master key rotation seals every key again, all or none, audited", async () => {
    const before = await f.db.selectFrom("signing_keys").selectAll().orderBy("kid").execute();
    const stranger = randomBytes(32);
    await expect(actions.resealSecrets(f.db, cli, stranger, randomBytes(32))).rejects.toThrow(
      MasterKeyMismatchError,
    );
    expect(await f.db.selectFrom("signing_keys").selectAll().orderBy("kid").execute()).toEqual(
      before,
    );

    const next = randomBytes(32);
    expect(await actions.resealSecrets(f.db, cli, masterKey, next)).toEqual({
      keys: before.length,
      webhookSecrets: 0,
      integrationSecrets: 0,
    });
    await assertMasterKeyOpensKeys(f.db, next);
    const after = await f.db.selectFrom("signing_keys").selectAll().orderBy("kid").execute();
    for (const [i, row] of after.entries()) {
      const old = before[i];
      expect(row).toMatchObject({ kid: old?.kid, public_x: old?.public_x, status: old?.status });
      expect(row.private_key_ciphertext).not.toBe(old?.private_key_ciphertext);
      // Same key pair: the private key opened with the new master key signs for the old kid.
      const privateKey = decryptPrivateKey(next, row.product_id, row.kid, encryptedOf(row));
      const publicKey = createPublicKey({
        key: { kty: "OKP", crv: "Ed25519", x: row.public_x },
        format: "jwk",
      });
      expect(
        verify(null, Buffer.from("x"), publicKey, sign(null, Buffer.from("x"), privateKey)),
      ).toBe(true);
      expect(() => decryptPrivateKey(masterKey, row.product_id, row.kid, encryptedOf(row))).toThrow(
        MasterKeyMismatchError,
      );
    }
    const audit = await f.db
      .selectFrom("audit_log")
      .select(["target_type", "details"])
      .where("action", "=", "master_key.rotate")
      .executeTakeFirstOrThrow();
    expect(audit.target_type).toBe("master_key");
    expect(JSON.parse(audit.details)).toEqual({
      keys: before.length,
      webhookSecrets: 0,
      integrationSecrets: 0,
    });
    // Back, so the other tests' app keeps opening its keys.
    await actions.resealSecrets(f.db, cli, next, masterKey);
  });

  it("another master key does not open the stored keys", async () => {
    await assertMasterKeyOpensKeys(f.db, masterKey);
    await expect(assertMasterKeyOpensKeys(f.db, randomBytes(32))).rejects.toThrow(
      MasterKeyMismatchError,
    );
  });
});

describe("master key", () => {
  const base64 = randomBytes(32).toString("base64");
  const hex = randomBytes(32).toString("hex");

  it("SHIPKEY_MASTER_KEY: 32 bytes as base64 or 64 hex digits", () => {
    expect(loadConfig({ SHIPKEY_MASTER_KEY: base64 }).masterKey?.toString("base64")).toBe(base64);
    expect(loadConfig({ SHIPKEY_MASTER_KEY: hex }).masterKey?.toString("hex")).toBe(hex);
    expect(loadConfig({}).masterKey).toBeNull();
    for (const bad of [
      "secret",
      randomBytes(16).toString("base64"),
      randomBytes(33).toString("base64"),
      hex.slice(2),
      `${hex}00`,
    ]) {
      expect(() => loadConfig({ SHIPKEY_MASTER_KEY: bad }), bad).toThrow(ConfigError);
      expect(parseMasterKey(bad)).toBeNull();
    }
    expect(() => loadConfig({ SHIPKEY_MASTER_KEY: "secret" })).toThrow(
      /SHIPKEY_MASTER_KEY must be 32 random bytes written as base64 \(openssl rand -base64 32\) or as 64 hex digits/,
    );
  });

  it("SQLite without SHIPKEY_MASTER_KEY: a random key in a 0600 file beside the database, kept", async () => {
    const dir = mkdtempSync(join(tmpdir(), "shipkey-master-"));
    const url = `sqlite:${join(dir, "data", "shipkey.db")}`;
    const database = await openDatabase(url);
    try {
      await migrateToLatest(database.db);
      const first = (await resolveMasterKey(null, url, database.db)).key;
      const file = masterKeyFileOf(join(dir, "data", "shipkey.db"));
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(parseMasterKey(readFileSync(file, "utf8"))?.equals(first)).toBe(true);
      expect((await resolveMasterKey(null, url, database.db)).key.equals(first)).toBe(true);
      // SHIPKEY_MASTER_KEY wins over the file.
      const configured = randomBytes(32);
      expect((await resolveMasterKey(configured, url, database.db)).key.equals(configured)).toBe(
        true,
      );
    } finally {
      await database.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("shipkey master-key rotate: SQLite's key file is replaced, SHIPKEY_NEW_MASTER_KEY otherwise", async () => {
    const dir = mkdtempSync(join(tmpdir(), "shipkey-rotate-"));
    try {
      const path = join(dir, "shipkey.db");
      const url = `sqlite:${path}`;
      const noEnv = { SHIPKEY_MASTER_KEY: "", SHIPKEY_NEW_MASTER_KEY: "" };
      expect(
        (
          await runCli(url, ["products", "create", "--slug", "app", "--name", "App"], {
            env: noEnv,
          })
        ).code,
      ).toBe(0);
      const file = masterKeyFileOf(path);
      const first = readFileSync(file, "utf8");
      // Prepares a key (which needs the master key), then promotes it so the next call can.
      const keysOf = async (env: Record<string, string>) => {
        const prepared = await runCli(url, ["products", "prepare-key", "app", "--json"], { env });
        if (prepared.code === 0)
          await runCli(url, ["products", "promote-key", "app", "--force"], { env });
        return prepared;
      };

      const rotated = await runCli(url, ["master-key", "rotate", "--json"], { env: noEnv });
      expect(rotated.code, rotated.stderr).toBe(0);
      expect(JSON.parse(rotated.stdout)).toEqual({
        keys: 1,
        webhookSecrets: 0,
        integrationSecrets: 0,
        file,
        previous: `${file}.old`,
      });
      const second = readFileSync(file, "utf8");
      expect(second).not.toBe(first);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(existsSync(`${file}.new`)).toBe(false);
      // The old key is kept until the operator deletes it (a lost last commit stays recoverable).
      expect(readFileSync(`${file}.old`, "utf8")).toBe(first);
      expect(statSync(`${file}.old`).mode & 0o777).toBe(0o600);
      expect((await keysOf(noEnv)).code).toBe(0);
      expect((await keysOf({ SHIPKEY_MASTER_KEY: first.trim() })).stderr).toMatch(
        /does not decrypt/,
      );

      // With SHIPKEY_MASTER_KEY: the new key must be given, and is not written anywhere.
      // A rotation that stopped half-way is never run over: its new key may be the only one.
      writeFileSync(`${file}.new`, `${randomBytes(32).toString("base64")}\n`);
      const halfWay = await runCli(url, ["master-key", "rotate"], { env: noEnv });
      expect(halfWay.code).toBe(1);
      expect(halfWay.stderr).toMatch(/\.new exists: an earlier rotation stopped half-way/);
      expect(existsSync(`${file}.new`)).toBe(true);
      rmSync(`${file}.new`);
      const memory = await runCli("sqlite::memory:", ["master-key", "rotate"], { env: noEnv });
      expect(memory.stderr).toMatch(/in-memory database has no master key/);

      const current = { SHIPKEY_MASTER_KEY: second.trim() };
      const missing = await runCli(url, ["master-key", "rotate"], { env: current });
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/set SHIPKEY_NEW_MASTER_KEY/);
      const same = await runCli(url, ["master-key", "rotate"], {
        env: { ...current, SHIPKEY_NEW_MASTER_KEY: second.trim() },
      });
      expect(same.stderr).toMatch(/is the current master key/);
      const next = randomBytes(32).toString("hex");
      const byEnv = await runCli(url, ["master-key", "rotate"], {
        env: { ...current, SHIPKEY_NEW_MASTER_KEY: next },
      });
      expect(byEnv.code, byEnv.stderr).toBe(0);
      expect(byEnv.stdout).toMatch(/Set SHIPKEY_MASTER_KEY to it for every process/);
      expect(readFileSync(file, "utf8")).toBe(second);
      expect((await keysOf({ SHIPKEY_MASTER_KEY: next })).code).toBe(0);
      expect((await keysOf(current)).code).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("PostgreSQL without SHIPKEY_MASTER_KEY: refused", () => {
    expect(() => assertMasterKeyConfigured(null, "postgres://localhost/shipkey")).toThrow(
      /SHIPKEY_MASTER_KEY is required with PostgreSQL/,
    );
  });

  it("the server refuses to start on PostgreSQL without it, or with a malformed one", async () => {
    const noKey = await runServerToExit({
      DATABASE_URL: "postgres://postgres@127.0.0.1:1/none",
      SHIPKEY_MASTER_KEY: "",
    });
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/^shipkey: SHIPKEY_MASTER_KEY is required with PostgreSQL/);
    const malformed = await runServerToExit({ SHIPKEY_MASTER_KEY: "not-a-key" });
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toMatch(/^shipkey: SHIPKEY_MASTER_KEY must be 32 random bytes/);
  });
});
