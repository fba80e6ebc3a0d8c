import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { runCli } from "../helpers/cli.js";
import { apiKeyScopes } from "../../src/contracts/vocabulary.js";
import { testEnvironment } from "../helpers/environment.js";
import { cookieAfter } from "../helpers/dashboard.js";

const run = promisify(execFile);
const tauri = (...args: string[]) =>
  run(process.execPath, ["node_modules/@tauri-apps/cli/tauri.js", "signer", ...args], {
    env: testEnvironment({ CI: "true", TAURI_SIGNING_PRIVATE_KEY_PASSWORD: "" }),
  });

interface SignerKey {
  /** The .pub file's contents: what tauri.conf.json's plugins.updater.pubkey holds. */
  publicKey: string;
  /** As minisign prints it in the key's untrusted comment. */
  keyId: string;
  keyFile: string;
}

/** Real keys and .sig files, made by @tauri-apps/cli's signer commands. */
let dir: string;
let keyA: SignerKey;
let keyB: SignerKey;
let signatureA: string;
let signatureB: string;

async function generateKey(name: string): Promise<SignerKey> {
  const keyFile = join(dir, `${name}.key`);
  await tauri("generate", "--ci", "-w", keyFile, "-p", "", "-f");
  const publicKey = readFileSync(`${keyFile}.pub`, "utf8");
  const comment = Buffer.from(publicKey, "base64").toString("utf8").split("\n")[0] ?? "";
  const keyId = /minisign public key: ([0-9A-F]{16})$/.exec(comment)?.[1];
  if (!keyId) throw new Error(`no key id in ${comment}`);
  return { publicKey, keyId, keyFile };
}

async function sign(key: SignerKey, artifact: string): Promise<string> {
  await tauri("sign", "-f", key.keyFile, "-p", "", artifact);
  return readFileSync(`${artifact}.sig`, "utf8").trim();
}

/** The minisign text of a Tauri signature, edited line by line, encoded again. */
function edit(signature: string, change: (lines: string[]) => void): string {
  const lines = Buffer.from(signature, "base64").toString("utf8").split("\n");
  change(lines);
  return Buffer.from(lines.join("\n")).toString("base64");
}

/** Replaces bytes of the signature line (algorithm at 0..2, key id at 2..10). */
function patchSignatureLine(signature: string, offset: number, bytes: Buffer): string {
  return edit(signature, (lines) => {
    const line = Buffer.from(lines[1] ?? "", "base64");
    bytes.copy(line, offset);
    lines[1] = line.toString("base64");
  });
}

function keyIdBytes(key: SignerKey): Buffer {
  return Buffer.from(key.keyId, "hex").reverse();
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "shipkey-tauri-"));
  [keyA, keyB] = await Promise.all([generateKey("a"), generateKey("b")]);
  const artifact = join(dir, "App.app.tar.gz");
  writeFileSync(artifact, "pretend this is an app bundle\n");
  const other = join(dir, "other.tar.gz");
  writeFileSync(other, "another artifact\n");
  [signatureA, signatureB] = await Promise.all([sign(keyA, artifact), sign(keyB, other)]);
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe.each(dialects)("Tauri signature check at publish (%s)", (dialect) => {
  let f: Fixture;
  let admin: string;
  let cookie: string;
  let csrf: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    admin = (await createApiKey(f.db, { name: "automation", scopes: [...apiKeyScopes] })).key;
    ({ cookie, csrf } = await adminAccess(f, "tauri@example.com"));
  });
  afterAll(async () => {
    await f.close();
  });

  const call = (method: "GET" | "PATCH", url: string, body?: unknown) =>
    callWithApiKey(f, admin, method, url, body);
  const setKey = (slug: string, tauriPublicKey: string | null) =>
    call("PATCH", `/api/admin/products/${slug}`, { tauriPublicKey });

  let versions = 0;
  const publish = (
    slug: string,
    releases: Array<Record<string, unknown>>,
    version = `1.0.${versions++}`,
  ) =>
    f.post(
      "/api/releases/publish",
      { productSlug: slug, version, channel: "STABLE", releases },
      { authorization: `Bearer ${f.publishKey}` },
    );
  const entry = (signature: unknown, platform = "MACOS", arch = "ARM64") => ({
    platform,
    arch,
    downloadUrl: `https://cdn.example.com/app-${platform}-${arch}.tar.gz`,
    signature,
  });
  const storedVersions = async (productId: string) =>
    (
      await f.db
        .selectFrom("release_versions")
        .select("version")
        .where("product_id", "=", productId)
        .execute()
    ).map((row) => row.version);

  describe("without a key, publish stores any signature as before", () => {
    it.each([
      ["a non-minisign string", "dW50cnVzdGVkIGNvbW1lbnQ6IHNpZ25hdHVyZQ=="],
      ["a path", "/home/runner/App.app.tar.gz.sig"],
      ["another key's signature", () => signatureB],
    ])("%s is accepted", async (_case, signature) => {
      const value = typeof signature === "function" ? signature() : signature;
      const response = await publish(f.otherProduct.slug, [entry(value)]);
      expect(response.statusCode).toBe(200);
    });
  });

  describe("setting the key (admin API)", () => {
    it("PATCH sets it, GET and the list show it with its key id, null clears it", async () => {
      // A trailing newline, as `cat a.key.pub` gives, is removed.
      const set = await setKey("other-app", `${keyA.publicKey}\n`);
      expect(set.statusCode).toBe(200);
      expect(set.json()).toMatchObject({
        slug: "other-app",
        name: "Other App",
        tauriPublicKey: keyA.publicKey,
        tauriKeyId: keyA.keyId,
      });
      expect((await call("GET", "/api/admin/products/other-app")).json()).toMatchObject({
        tauriPublicKey: keyA.publicKey,
        tauriKeyId: keyA.keyId,
      });
      const list = (await call("GET", "/api/admin/products")).json();
      expect(list.items).toContainEqual(
        expect.objectContaining({ slug: "other-app", tauriKeyId: keyA.keyId }),
      );

      const cleared = await setKey("other-app", null);
      expect(cleared.statusCode).toBe(200);
      expect(cleared.json()).toMatchObject({ tauriPublicKey: null, tauriKeyId: null });
    });

    it("setting and clearing are audited with the key id", async () => {
      await setKey("other-app", keyB.publicKey);
      await setKey("other-app", null);
      const entries = await f.db
        .selectFrom("audit_log")
        .select(["action", "target_id", "details"])
        .where("action", "like", "product.tauri_key%")
        .where("target_id", "=", "other-app")
        .execute();
      // Both may share a millisecond, and audit ids are random: compare without order.
      expect(entries.map((e) => [e.action, e.target_id, JSON.parse(e.details)])).toEqual(
        expect.arrayContaining([
          ["product.tauri_key_clear", "other-app", { tauriKeyId: null }],
          ["product.tauri_key_set", "other-app", { tauriKeyId: keyB.keyId }],
        ]),
      );
    });

    it("name alone still renames; name and key together change both", async () => {
      const renamed = await call("PATCH", "/api/admin/products/other-app", { name: "Other 2" });
      expect(renamed.json()).toMatchObject({ name: "Other 2", tauriPublicKey: null });
      const both = await call("PATCH", "/api/admin/products/other-app", {
        name: "Other App",
        tauriPublicKey: keyB.publicKey,
      });
      expect(both.json()).toMatchObject({ name: "Other App", tauriKeyId: keyB.keyId });
      await setKey("other-app", null);
    });

    it.each([
      [
        "not base64",
        () => "not a key!",
        "tauriPublicKey must be the base64 of a minisign public key file",
      ],
      [
        "the bare minisign key line",
        () => bareKeyLine(keyA),
        "tauriPublicKey is a bare minisign key line",
      ],
      [
        "base64 of other text",
        () => Buffer.from("hello").toString("base64"),
        "tauriPublicKey is not an Ed25519 minisign public key",
      ],
      [
        "a signature instead of a key",
        () => signatureA,
        "tauriPublicKey is not an Ed25519 minisign public key",
      ],
      ["empty", () => "  ", "tauriPublicKey is empty; send null to clear the product's key"],
    ])("%s is a 400 naming the field", async (_case, value, message) => {
      const response = await setKey("other-app", value());
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        error: expect.stringContaining(message),
        code: "INVALID_FIELD_VALUE",
        field: "tauriPublicKey",
      });
    });

    it.each([
      ["no field", {}, "body must NOT have fewer than 1 properties", undefined],
      [
        "a number",
        { tauriPublicKey: 5 },
        "body/tauriPublicKey must be string,null",
        "tauriPublicKey",
      ],
      [
        "over 1024 characters",
        { tauriPublicKey: "x".repeat(1025) },
        "body/tauriPublicKey must NOT have more than 1024 characters",
        "tauriPublicKey",
      ],
      ["an unknown field", { pubkey: "x" }, "Unknown field pubkey", "pubkey"],
    ])("a PATCH body with %s is a 400", async (_case, body, message, field) => {
      const response = await call("PATCH", "/api/admin/products/other-app", body);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        error: message,
        code: message.startsWith("Unknown") ? "UNKNOWN_FIELD" : "INVALID_FIELD_VALUE",
        ...(field && { field }),
      });
    });

    it("a bad key with a new name changes nothing; an unknown product is a 404", async () => {
      const response = await call("PATCH", "/api/admin/products/other-app", {
        name: "Renamed",
        tauriPublicKey: "bad",
      });
      expect(response.statusCode).toBe(400);
      expect((await call("GET", "/api/admin/products/other-app")).json()).toMatchObject({
        name: "Other App",
        tauriPublicKey: null,
      });
      const unknown = await setKey("no-such-app", keyA.publicKey);
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json().code).toBe("PRODUCT_NOT_FOUND");
    });
  });

  describe("publish with the key set", () => {
    beforeAll(async () => {
      expect((await setKey(f.product.slug, keyA.publicKey)).statusCode).toBe(200);
    });

    it("accepts the signature tauri signer made with the key, and stores it as sent", async () => {
      const response = await publish(f.product.slug, [entry(signatureA)], "2.0.0");
      expect(response.statusCode).toBe(200);
      const feed = await f.app.inject({
        method: "GET",
        url: `/api/updates/${f.product.slug}/tauri/darwin/aarch64/1.0.0`,
      });
      expect(feed.json().signature).toBe(signatureA);
    });

    it('accepts the legacy "Ed" algorithm as well as the prehashed "ED"', async () => {
      const legacy = patchSignatureLine(signatureA, 0, Buffer.from("Ed"));
      expect((await publish(f.product.slug, [entry(legacy)])).statusCode).toBe(200);
    });

    it("accepts an entry without a signature (the Tauri feed never offers it)", async () => {
      const response = await publish(
        f.product.slug,
        [
          entry(signatureA),
          { ...entry(null, "WINDOWS", "X64"), downloadUrl: "https://cdn.example.com/App.msi" },
        ],
        "3.0.0",
      );
      expect(response.statusCode).toBe(200);
      const feed = await f.app.inject({
        method: "GET",
        url: `/api/updates/${f.product.slug}/tauri/windows/x86_64/1.0.0`,
      });
      expect(feed.statusCode).toBe(204);
    });

    const refusals: Array<[string, () => unknown, () => string]> = [
      [
        "an unrelated key's signature",
        () => signatureB,
        () => `signed by key id ${keyB.keyId}, the product's key is ${keyA.keyId}`,
      ],
      [
        "another key's signature claiming the product's key id",
        () => patchSignatureLine(signatureB, 2, keyIdBytes(keyA)),
        () => "global signature does not verify",
      ],
      [
        "a tampered trusted comment",
        () =>
          edit(signatureA, (lines) => {
            lines[2] = `${lines[2] ?? ""}\tfile:evil.tar.gz`;
          }),
        () => "global signature does not verify",
      ],
      [
        "a path instead of the .sig contents",
        () => "src-tauri/target/release/bundle/macos/App.app.tar.gz.sig",
        () =>
          "signature is not base64 (it looks like a file path: send the contents of the .sig file)",
      ],
      [
        "a Windows path",
        () => "C:\\build\\App_1.0.0_x64-setup.nsis.zip.sig",
        () => "signature is not base64 (it looks like a file path",
      ],
      ["garbage that is not base64", () => "not base64 at all", () => "signature is not base64"],
      [
        "the .sig contents with a trailing newline",
        () => `${signatureA}\n`,
        () => "signature is not base64",
      ],
      [
        "base64 that is not a minisign signature",
        () => Buffer.from("hello world").toString("base64"),
        () => "not a minisign signature",
      ],
      [
        "a minisign signature with an unknown algorithm",
        () => patchSignatureLine(signatureA, 0, Buffer.from("XX")),
        () => "not a minisign signature",
      ],
      [
        "the decoded .sig text",
        () => Buffer.from(signatureA, "base64").toString("utf8"),
        () => "signature is not base64 (send the .sig file's contents as they are, not decoded)",
      ],
    ];

    it.each(refusals)(
      "refuses %s with a 400 naming the entry",
      async (_case, signature, reason) => {
        const before = await storedVersions(f.product.id);
        const response = await publish(f.product.slug, [
          entry(signatureA, "LINUX", "X64"),
          entry(signature(), "MACOS", "X64"),
        ]);
        expect(response.statusCode).toBe(400);
        const body = response.json();
        expect(body.code).toBe("TAURI_SIGNATURE_INVALID");
        expect(body.error).toMatch(/^releases\[1\] \(MACOS\/X64\): /);
        expect(body.error).toContain(reason());
        expect(Object.keys(body)).toEqual(["error", "code"]);
        // Atomic: nothing of the refused publish is stored.
        expect(await storedVersions(f.product.id)).toEqual(before);
      },
    );

    it("the other product, without a key, is not checked", async () => {
      expect((await publish(f.otherProduct.slug, [entry("anything")])).statusCode).toBe(200);
    });

    it("after the key is cleared, any signature is accepted again", async () => {
      await setKey(f.product.slug, null);
      expect((await publish(f.product.slug, [entry("anything")])).statusCode).toBe(200);
      await setKey(f.product.slug, keyA.publicKey);
      expect((await publish(f.product.slug, [entry("anything")])).statusCode).toBe(400);
    });
  });

  it("the OpenAPI document describes tauriPublicKey on PATCH and tauriKeyId on reads", async () => {
    const doc = (await f.app.inject({ method: "GET", url: "/openapi.json" })).json();
    const product = doc.paths["/api/admin/products/{slug}"];
    const body = product.patch.requestBody.content["application/json"].schema;
    expect(body.minProperties).toBe(1);
    expect(body.properties.tauriPublicKey).toMatchObject({ type: ["string", "null"] });
    const read = product.get.responses["200"].content["application/json"].schema;
    expect(Object.keys(read.properties)).toEqual(
      expect.arrayContaining(["tauriPublicKey", "tauriKeyId"]),
    );
    expect(product.get.responses["4XX"]).toBeDefined();
    const publish = doc.paths["/api/releases/publish"].post.requestBody.content["application/json"];
    expect(publish.schema.properties.releases.items.properties.signature.description).toContain(
      "TAURI_SIGNATURE_INVALID",
    );
  });

  describe("dashboard", () => {
    const form = (url: string, fields: Record<string, string>) =>
      f.app.inject({
        method: "POST",
        url,
        headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString(),
      });

    it("sets the key, shows its key id, refuses a bad one, clears it", async () => {
      const set = await form("/admin/products/other-app/tauri-key", {
        tauriPublicKey: keyB.publicKey,
      });
      expect(set.statusCode).toBe(303);
      const page = await f.app.inject({
        method: "GET",
        url: set.headers.location as string,
        headers: { cookie: cookieAfter(cookie, set) },
      });
      expect(page.body).toContain("Tauri public key set");
      expect(page.body).toContain(keyB.keyId);

      const bad = await form("/admin/products/other-app/tauri-key", { tauriPublicKey: "nope" });
      expect(bad.statusCode).toBe(400);
      expect(bad.body).toContain("tauriPublicKey must be the base64 of a minisign public key file");

      const cleared = await form("/admin/products/other-app/tauri-key/clear", {});
      expect(cleared.statusCode).toBe(303);
      expect((await call("GET", "/api/admin/products/other-app")).json().tauriKeyId).toBeNull();
    });
  });

  describe("CLI: products update", () => {
    const cli = (...args: string[]) => runCli(f.url, args);

    it("--tauri-public-key sets the key, none clears it, a bad key fails naming the field", async () => {
      const set = await cli(
        "products",
        "update",
        "other-app",
        "--tauri-public-key",
        keyA.publicKey,
        "--json",
      );
      expect(set.code).toBe(0);
      expect(JSON.parse(set.stdout)).toMatchObject({ slug: "other-app", tauriKeyId: keyA.keyId });
      const response = await publish(f.otherProduct.slug, [entry(signatureB)]);
      expect(response.json().error).toContain(`signed by key id ${keyB.keyId}`);

      const bad = await cli(
        "products",
        "update",
        "other-app",
        "--tauri-public-key",
        "nope",
        "--json",
      );
      expect(bad.code).toBe(1);
      expect(JSON.parse(bad.stderr)).toMatchObject({ code: "INVALID_FIELD_VALUE" });
      expect(JSON.parse(bad.stderr).error).toMatch(/^tauriPublicKey must be/);

      const cleared = await cli(
        "products",
        "update",
        "other-app",
        "--tauri-public-key",
        "none",
        "--json",
      );
      expect(JSON.parse(cleared.stdout)).toMatchObject({ tauriPublicKey: null, tauriKeyId: null });

      const audit = await f.db
        .selectFrom("audit_log")
        .select(["actor_type", "action"])
        .where("action", "like", "product.tauri_key%")
        .orderBy("at", "desc")
        .orderBy("id", "desc")
        .limit(1)
        .executeTakeFirstOrThrow();
      expect(audit).toEqual({ actor_type: "cli", action: "product.tauri_key_clear" });
    });

    it("without --name or --tauri-public-key is a usage error", async () => {
      const result = await cli("products", "update", "other-app");
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("products update needs --name, --tauri-public-key");
    });
  });
});

function bareKeyLine(key: SignerKey): string {
  return Buffer.from(key.publicKey, "base64").toString("utf8").split("\n")[1] ?? "";
}
