import { randomBytes } from "node:crypto";
import { copyFileSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createLocalJWKSet, type JWK, jwtVerify } from "jose";
import type { Kysely } from "kysely";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  FileStorage,
  MemoryStorage,
  ShipkeyClient,
  type ShipkeyClientOptions,
  ShipkeyError,
} from "../../packages/client/src/index.js";
import { openDatabase } from "../../src/db/database.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import type { DB } from "../../src/db/schema.js";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import { createLicense, updateLicense } from "../../src/domain/licenses/manage-licenses.js";
import { createProduct } from "../../src/domain/products/products.js";
import { publishRelease } from "../../src/actions/releases.js";
import { testActor } from "../helpers/actions.js";
import { bodySwappingProxy } from "../helpers/attack-proxies.js";
import { createTestDatabase, dialects } from "../helpers/database.js";
import { referenceServer, signingKey } from "../helpers/reference-signer.js";
import {
  postJson,
  runCliToExit,
  type ServerProcess,
  startServer,
} from "../helpers/server-process.js";
import { apiKeyScopes } from "../../src/contracts/vocabulary.js";

/** The SDK against the compiled server, started as a process, over real HTTP. */

const masterKey = randomBytes(32).toString("base64");
const day = 86_400_000;

async function codeOf(promise: Promise<unknown>): Promise<ShipkeyError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ShipkeyError);
  return error as ShipkeyError;
}

async function stop(server: ServerProcess): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  server.child.kill("SIGTERM");
  await once(server.child, "exit");
}

type Mode = "pass" | "rewrite-body" | "strip-header" | "forge" | "replay";

/** A local HTTP proxy in front of the server, changing answers as an attacker would. */
async function tamperingProxy(target: string) {
  const state: { mode: Mode; recorded?: { status: number; headers: Headers; body: Buffer } } = {
    mode: "pass",
  };
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      void (async () => {
        response.sendDate = false;
        if (state.mode === "forge") {
          response.writeHead(200, {
            "content-type": "application/json",
            date: new Date().toUTCString(),
          });
          response.end(
            JSON.stringify({
              valid: true,
              edition: "pro",
              editionName: "Pro",
              features: ["everything"],
              expiresAt: null,
              maxMachines: 1000,
              activeMachines: 1,
            }),
          );
          return;
        }
        let answer: { status: number; headers: Headers; body: Buffer };
        if (state.mode === "replay" && state.recorded) {
          answer = state.recorded;
        } else {
          const upstream = await fetch(`${target}${request.url ?? "/"}`, {
            method: request.method ?? "GET",
            headers: {
              "content-type": String(request.headers["content-type"] ?? "application/json"),
              "shipkey-nonce": String(request.headers["shipkey-nonce"] ?? ""),
            },
            body: request.method === "POST" ? Buffer.concat(chunks) : undefined,
          });
          answer = {
            status: upstream.status,
            headers: upstream.headers,
            body: Buffer.from(await upstream.arrayBuffer()),
          };
          state.recorded = answer;
        }
        let body = answer.body;
        if (state.mode === "rewrite-body") {
          // A better edition on a success; a harmless-looking code on a refusal.
          const text = body.toString();
          body = Buffer.from(
            text
              .replace(/"maxMachines":\d+/, '"maxMachines":1000')
              .replace(/"code":"[A-Z_]+"/, '"code":"RATE_LIMITED"'),
          );
        }
        const headers: Record<string, string> = {
          "content-type": answer.headers.get("content-type") ?? "application/json",
          date: answer.headers.get("date") ?? new Date().toUTCString(),
        };
        const signature = answer.headers.get("shipkey-signature");
        if (signature !== null && state.mode !== "strip-header") {
          headers["shipkey-signature"] = signature;
        }
        response.writeHead(answer.status, headers);
        response.end(body);
      })();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    state,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe.each(dialects)("the client SDK against the server process (%s)", (dialect) => {
  let databaseUrl: string;
  let dropDatabase: () => Promise<void>;
  let server: ServerProcess;
  let jwks: { keys: JWK[] };
  const env = (extra: Record<string, string> = {}) => ({
    DATABASE_URL: databaseUrl,
    SHIPKEY_MASTER_KEY: masterKey,
    ...extra,
  });

  async function withDb<T>(run: (db: Kysely<DB>) => Promise<T>): Promise<T> {
    const database = await openDatabase(databaseUrl);
    try {
      return await run(database.db);
    } finally {
      await database.close();
    }
  }

  const license = (settings: Parameters<typeof createLicense>[1]) =>
    withDb(async (db) => (await createLicense(db, settings)).licenseKey);

  function client(options: Partial<ShipkeyClientOptions> = {}) {
    const storage = options.storage ?? new MemoryStorage();
    const sdk = new ShipkeyClient({
      server: server.baseUrl,
      productSlug: "app",
      publicKeys: jwks,
      storage,
      machineId: `machine-${randomBytes(4).toString("hex")}`,
      retry: { attempts: 2, baseDelayMs: 10, maxDelayMs: 20 },
      ...options,
    });
    return { sdk, storage };
  }

  beforeAll(async () => {
    const testDatabase = await createTestDatabase(dialect);
    databaseUrl = testDatabase.url;
    dropDatabase = () => testDatabase.drop();
    await withDb(async (db) => {
      await migrateToLatest(db);
      const app = await createProduct(db, { slug: "app", name: "App" });
      await createProduct(db, { slug: "other", name: "Other" });
      const entry = (version: string) => ({
        platform: "MACOS" as const,
        arch: "ARM64" as const,
        downloadUrl: `https://downloads.example.com/app-${version}.zip`,
        signature: "c2lnbmF0dXJl",
        fileSize: 1234,
      });
      const notes = null;
      await publishRelease(db, testActor, app, {
        version: "1.2.0",
        channel: "STABLE",
        releaseNotes: notes,
        entries: [entry("1.2.0")],
      });
      // A product that gives its updates only to licensed machines, through the redirect.
      const gated = await createProduct(db, { slug: "gated", name: "Gated" });
      await db
        .updateTable("products")
        .set({ updates_require_license: 1, download_redirects: 1 })
        .where("id", "=", gated.id)
        .execute();
      await publishRelease(db, testActor, gated, {
        version: "1.2.0",
        channel: "STABLE",
        releaseNotes: notes,
        entries: [entry("1.2.0")],
      });
      await publishRelease(db, testActor, app, {
        version: "1.3.0-beta.1",
        channel: "BETA",
        releaseNotes: notes,
        entries: [entry("1.3.0-beta.1")],
      });
    });
    server = await startServer(env());
    jwks = (await (await fetch(`${server.baseUrl}/api/products/app/keys`)).json()) as {
      keys: JWK[];
    };
  });
  afterAll(async () => {
    await stop(server);
    await dropDatabase();
  });

  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it("happy path: activate, validate, checkout, deactivate, with typed results", async () => {
    const licenseKey = await license({
      productSlug: "app",
      maxMachines: 2,
      edition: "pro",
      editionName: "Pro",
      features: ["export", "sync"],
    });
    const { sdk } = client();
    const machineId = await sdk.machineId();

    const activated = await sdk.activate(licenseKey, { machineName: "Ada's laptop" });
    expect(activated).toEqual({
      activated: true,
      message: "Machine activated",
      activation: { machineId, machineName: "Ada's laptop", activatedAt: expect.any(String) },
      activeMachines: 1,
      maxMachines: 2,
    });
    expect((await sdk.stored())?.certificateExpiresAt).toBeDefined();
    const again = await sdk.activate(licenseKey);
    expect(again.activated).toBe(false);
    expect(again.message).toBe("Machine already activated");

    expect(await sdk.validate()).toEqual({
      valid: true,
      offline: false,
      edition: "pro",
      editionName: "Pro",
      features: ["export", "sync"],
      expiresAt: null,
      maxMachines: 2,
      activeMachines: 1,
    });

    const checkout = await sdk.checkout({ ttlSeconds: 600 });
    expect(checkout.claims).toMatchObject({
      sub: machineId,
      product: "app",
      edition: "pro",
      features: ["export", "sync"],
      maxMachines: 2,
      licenseExpiresAt: null,
    });
    expect(checkout.claims.exp - checkout.claims.iat).toBe(600);
    expect(Date.parse(checkout.expiresAt)).toBe(checkout.claims.exp * 1000);

    // The certificate is a standard JWT: jose's jwtVerify with the published JWKS, no SDK.
    const verified = await jwtVerify(checkout.certificate, createLocalJWKSet(jwks), {
      typ: "shipkey-license+jwt",
      algorithms: ["EdDSA"],
      subject: machineId,
    });
    expect(verified.payload.product).toBe("app");

    expect(await sdk.deactivate()).toEqual({ message: "Machine deactivated", machineId });
    expect(await sdk.stored()).toBeUndefined();
    expect((await codeOf(sdk.validate())).code).toBe("NOT_ACTIVATED");
  });

  it("every refusal of activate carries the server's code, signed", async () => {
    const suspended = await license({ productSlug: "app", maxMachines: 1, status: "SUSPENDED" });
    const expired = await license({
      productSlug: "app",
      maxMachines: 1,
      expiresAt: Date.now() - day,
    });
    const otherProduct = await license({ productSlug: "other", maxMachines: 1 });
    const full = await license({ productSlug: "app", maxMachines: 1 });
    await client().sdk.activate(full);

    const cases: Array<[string, () => Promise<unknown>, number]> = [
      ["LICENSE_NOT_FOUND", () => client().sdk.activate("NO-SUCH-KEY-123456"), 404],
      ["LICENSE_NOT_ACTIVE", () => client().sdk.activate(suspended), 403],
      ["LICENSE_EXPIRED", () => client().sdk.activate(expired), 403],
      ["LICENSE_PRODUCT_MISMATCH", () => client().sdk.activate(otherProduct), 403],
      ["MAX_MACHINES_REACHED", () => client().sdk.activate(full), 403],
      ["MISSING_REQUIRED_FIELDS", () => client().sdk.activate(""), 400],
      ["FIELD_TOO_LONG", () => client().sdk.activate(full, { machineName: "x".repeat(256) }), 400],
      ["INVALID_FIELD_VALUE", () => client().sdk.activate(full, { machineName: "a\u0000b" }), 400],
    ];
    for (const [code, attempt, status] of cases) {
      const error = await codeOf(attempt());
      expect([error.code, error.status, error.signed], code).toEqual([code, status, true]);
    }
    // An unknown product is known to nobody: the answer is unsigned, and said so.
    const unknown = client({ productSlug: "no-such-product" });
    const error = await codeOf(unknown.sdk.activate("NO-SUCH-KEY-123456"));
    expect([error.code, error.signed]).toEqual(["LICENSE_NOT_FOUND", false]);
  });

  it("every refusal of validate and checkout; a signed refusal ends offline use", async () => {
    const licenseKey = await license({ productSlug: "app", maxMachines: 2 });
    const { sdk } = client();
    await sdk.activate(licenseKey);
    const machineId = await sdk.machineId();

    // Deactivated behind the client's back: MACHINE_NOT_ACTIVATED with canActivate.
    await postJson(server.baseUrl, "/api/license/deactivate", { licenseKey, machineId });
    let error = await codeOf(sdk.validate());
    expect([error.code, error.canActivate, error.signed]).toEqual([
      "MACHINE_NOT_ACTIVATED",
      true,
      true,
    ]);
    expect((await sdk.stored())?.certificateExpiresAt).toBeUndefined();
    error = await codeOf(sdk.checkout());
    expect([error.code, error.canActivate]).toEqual(["MACHINE_NOT_ACTIVATED", true]);

    await sdk.activate(licenseKey);
    await client().sdk.activate(licenseKey);
    await withDb((db) => updateLicense(db, licenseKey, { maxMachines: 1 }));
    expect((await codeOf(sdk.validate())).code).toBe("MAX_MACHINES_REACHED");
    expect((await codeOf(sdk.checkout())).code).toBe("MAX_MACHINES_REACHED");

    await withDb((db) => updateLicense(db, licenseKey, { maxMachines: 2, status: "SUSPENDED" }));
    expect((await codeOf(sdk.validate())).code).toBe("LICENSE_NOT_ACTIVE");
    await withDb((db) =>
      updateLicense(db, licenseKey, { status: "ACTIVE", expiresAt: Date.now() - 1000 }),
    );
    expect((await codeOf(sdk.validate())).code).toBe("LICENSE_EXPIRED");
    expect((await codeOf(sdk.checkout())).code).toBe("LICENSE_EXPIRED");

    const full = await license({ productSlug: "app", maxMachines: 1 });
    await client().sdk.activate(full);
    const { sdk: late, storage } = client();
    await storage.set(
      "shipkey:app:state",
      JSON.stringify({ licenseKey: full, machineId: await late.machineId() }),
    );
    error = await codeOf(late.validate());
    expect([error.code, error.canActivate]).toEqual(["MACHINE_NOT_ACTIVATED", false]);
  });

  it("reactivate: true takes a freed seat back by itself, and only a free one", async () => {
    const licenseKey = await license({ productSlug: "app", maxMachines: 1 });
    const { sdk } = client({ reactivate: true });
    await sdk.activate(licenseKey);
    const machineId = await sdk.machineId();
    // Freed behind the app's back, as a reset or a lapsed lease does.
    await postJson(server.baseUrl, "/api/license/deactivate", { licenseKey, machineId });
    expect(await sdk.validate()).toMatchObject({ valid: true, offline: false, activeMachines: 1 });
    // The seat taken by another machine meanwhile: the refusal, no second attempt.
    await postJson(server.baseUrl, "/api/license/deactivate", { licenseKey, machineId });
    await client().sdk.activate(licenseKey);
    const error = await codeOf(sdk.validate());
    expect([error.code, error.canActivate]).toEqual(["MACHINE_NOT_ACTIVATED", false]);
  });

  it("refusals of deactivate: ACTIVATION_NOT_FOUND forgets the license locally", async () => {
    const licenseKey = await license({ productSlug: "app", maxMachines: 1 });
    const { sdk } = client();
    await sdk.activate(licenseKey);
    await postJson(server.baseUrl, "/api/license/deactivate", {
      licenseKey,
      machineId: await sdk.machineId(),
    });
    const error = await codeOf(sdk.deactivate());
    expect([error.code, error.status, error.signed]).toEqual(["ACTIVATION_NOT_FOUND", 404, true]);
    expect(await sdk.stored()).toBeUndefined();
    expect((await codeOf(sdk.deactivate())).code).toBe("NOT_ACTIVATED");
  });

  it("a proxy that rewrites the body, strips the header, forges or replays an answer is refused", async () => {
    const licenseKey = await license({ productSlug: "app", maxMachines: 3 });
    const proxy = await tamperingProxy(server.baseUrl);
    cleanups.push(proxy.close);
    const { sdk } = client({ server: proxy.url });
    await sdk.activate(licenseKey);
    expect((await sdk.validate()).offline).toBe(false);

    for (const mode of ["rewrite-body", "strip-header", "forge", "replay"] as const) {
      proxy.state.mode = mode;
      // validate never counts the answer: it runs on the certificate, as when offline.
      expect(await sdk.validate(), mode).toMatchObject({ valid: true, offline: true });
      proxy.state.mode = "pass";
      await sdk.validate(); // records a fresh signed answer for the replay
    }
    // A refusal whose body was rewritten is tampering too: it changes nothing stored, and the
    // genuine refusal, once it comes through, ends offline use.
    await withDb((db) => updateLicense(db, licenseKey, { status: "SUSPENDED" }));
    proxy.state.mode = "rewrite-body";
    expect((await codeOf(sdk.checkout())).code).toBe("SIGNATURE_INVALID");
    expect((await sdk.validate()).offline).toBe(true);
    proxy.state.mode = "pass";
    expect((await codeOf(sdk.validate())).code).toBe("LICENSE_NOT_ACTIVE");
    expect((await sdk.stored())?.certificateExpiresAt).toBeUndefined();
  });

  it("a proxy that keeps the nonce and swaps licenseKey/machineId for a donor's: the genuine signed answer is refused", async () => {
    const donorKey = await license({ productSlug: "app", maxMachines: 3 });
    const donor = client();
    await donor.sdk.activate(donorKey);
    const proxy = await bodySwappingProxy(server.baseUrl, {
      licenseKey: donorKey,
      machineId: await donor.sdk.machineId(),
    });
    cleanups.push(proxy.close);

    const { sdk, storage } = client({ server: proxy.url });
    expect((await codeOf(sdk.activate("MADE-UP-KEY-0000"))).code).toBe("SIGNATURE_INVALID");
    expect(await sdk.stored()).toBeUndefined();
    // The made-up key written into the storage by hand is not reported valid either.
    await storage.set(
      "shipkey:app:state",
      JSON.stringify({ licenseKey: "MADE-UP-KEY-0000", machineId: await sdk.machineId() }),
    );
    expect((await codeOf(sdk.validate())).code).toBe("SIGNATURE_INVALID");
    expect((await codeOf(sdk.checkout())).code).toBe("SIGNATURE_INVALID");
    // Without the proxy, the server says what it thinks of the made-up key.
    const direct = client({ storage, machineId: await sdk.machineId() });
    expect((await codeOf(direct.sdk.validate())).code).toBe("LICENSE_NOT_FOUND");
  });

  it("a storage file copied to a second machine is refused there; activate on that machine works", async () => {
    const dir = mkdtempSync(join(tmpdir(), "shipkey-sdk-"));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const licenseKey = await license({ productSlug: "app", maxMachines: 2 });
    const first = client({ storage: new FileStorage(join(dir, "a.json")), machineId: "machine-a" });
    await first.sdk.activate(licenseKey);
    copyFileSync(join(dir, "a.json"), join(dir, "b.json"));

    const second = client({
      storage: new FileStorage(join(dir, "b.json")),
      machineId: "machine-b",
    });
    for (const call of [
      () => second.sdk.validate(),
      () => second.sdk.checkout(),
      () => second.sdk.deactivate(),
    ]) {
      expect((await codeOf(call())).code).toBe("STATE_FROM_ANOTHER_MACHINE");
    }
    expect(await second.sdk.stored()).toBeUndefined();
    expect((await second.sdk.activate(licenseKey)).activated).toBe(true);
    expect(await second.sdk.validate()).toMatchObject({
      valid: true,
      offline: false,
      activeMachines: 2,
    });
    expect((await first.sdk.validate()).offline).toBe(false);
  });

  it("jwksUrl: after the root is stored, a proxy serving its own JWKS and signing with its key is refused", async () => {
    const licenseKey = await license({ productSlug: "app", maxMachines: 1 });
    const storage = new MemoryStorage();
    const options = { jwksUrl: "api/products/app/keys", publicKeys: undefined, storage };
    const genuine = client({ ...options, machineId: "jwks-machine" });
    await genuine.sdk.activate(licenseKey);
    const root = await storage.get("shipkey:app:jwks");
    expect(root).toBeDefined();

    const attacker = await signingKey();
    const proxy = await referenceServer({
      key: attacker,
      offlineSeconds: 3600,
      jwks: { keys: [{ ...attacker.jwk, status: "current" }] },
    });
    cleanups.push(proxy.close);
    const proxied = client({ ...options, server: proxy.url, machineId: "jwks-machine" });
    expect((await codeOf(proxied.sdk.checkout())).code).toBe("SIGNATURE_INVALID");
    expect(await proxied.sdk.validate()).toMatchObject({ valid: true, offline: true });
    expect(await storage.get("shipkey:app:jwks")).toBe(root);
  });

  it("renews the certificate after an online validate once half its period has passed", async () => {
    const licenseKey = await license({ productSlug: "app", maxMachines: 1 });
    let now = Date.now();
    const checkouts: string[] = [];
    const { sdk } = client({
      clock: () => new Date(now),
      fetch: (input, init) => {
        if (String(input).endsWith("/checkout")) checkouts.push(String(input));
        return fetch(input, init);
      },
    });
    await sdk.activate(licenseKey);
    expect(checkouts).toHaveLength(1);
    const { certificateExpiresAt } = (await sdk.stored()) ?? {};
    const exp = Date.parse(certificateExpiresAt ?? "");
    const halfway = (Date.now() + exp) / 2;
    now = halfway - 60_000;
    await sdk.validate();
    expect(checkouts).toHaveLength(1);
    now = halfway + 60_000;
    await sdk.validate();
    expect(checkouts).toHaveLength(2);
  });

  it("checkForUpdate reads the generic feed: newer release, channel, nothing newer, errors", async () => {
    const { sdk } = client();
    const update = await sdk.checkForUpdate({
      platform: "darwin",
      arch: "arm64",
      currentVersion: "1.0.0",
    });
    expect(update).toEqual({
      version: "1.2.0",
      channel: "STABLE",
      notes: null,
      pubDate: expect.any(String),
      url: "https://downloads.example.com/app-1.2.0.zip",
      signature: "c2lnbmF0dXJl",
      sha512: null,
      fileSize: 1234,
      critical: false,
    });
    const beta = await sdk.checkForUpdate({
      platform: "MACOS",
      arch: "ARM64",
      currentVersion: "1.2.0",
      channel: "beta",
    });
    expect(beta?.version).toBe("1.3.0-beta.1");
    expect(
      await sdk.checkForUpdate({ platform: "MACOS", arch: "ARM64", currentVersion: "1.2.0" }),
    ).toBeNull();
    const noChannel = { platform: "MACOS", arch: "ARM64", currentVersion: "1.0.0" } as const;
    const channel = "nightly" as "stable";
    expect((await codeOf(sdk.checkForUpdate({ ...noChannel, channel }))).code).toBe(
      "INVALID_CHANNEL",
    );
    expect((await codeOf(sdk.checkForUpdate({ ...noChannel, currentVersion: "one" }))).code).toBe(
      "INVALID_FIELD_VALUE",
    );
    const unknown = client({ productSlug: "no-such-product" }).sdk;
    expect((await codeOf(unknown.checkForUpdate(noChannel))).code).toBe("PRODUCT_NOT_FOUND");
  });

  it("checkForUpdate sends the stored license where updates need one; updateHeaders() opens the download", async () => {
    const licenseKey = await license({ productSlug: "gated", maxMachines: 1 });
    const keys = (await (await fetch(`${server.baseUrl}/api/products/gated/keys`)).json()) as {
      keys: JWK[];
    };
    const { sdk } = client({ productSlug: "gated", publicKeys: keys });
    const options = { platform: "MACOS", arch: "ARM64", currentVersion: "1.0.0" } as const;
    const downloads = `${server.baseUrl}/api/downloads/gated/1.2.0/MACOS/ARM64/app-1.2.0.zip`;
    expect(await sdk.updateHeaders(downloads)).toEqual({});
    expect((await codeOf(sdk.checkForUpdate(options))).code).toBe("UPDATES_LICENSE_REQUIRED");

    await sdk.activate(licenseKey);
    const update = await sdk.checkForUpdate(options);
    expect(update?.version).toBe("1.2.0");
    const url = update?.url ?? "";
    expect(url).toBe(downloads);
    // The license goes only to this server's download redirect, never to another host.
    for (const elsewhere of [
      "https://downloads.example.com/app-1.2.0.zip",
      `${server.baseUrl}/api/updates/gated/latest`,
      downloads.replace("127.0.0.1", "localhost"),
    ]) {
      expect(await sdk.updateHeaders(elsewhere), elsewhere).toEqual({});
    }
    const download = await fetch(url, {
      redirect: "manual",
      headers: await sdk.updateHeaders(url),
    });
    expect(download.status).toBe(302);
    expect(download.headers.get("location")).toBe("https://downloads.example.com/app-1.2.0.zip");
    expect((await fetch(url, { redirect: "manual" })).status).toBe(401);

    await sdk.deactivate();
    expect((await codeOf(sdk.checkForUpdate(options))).code).toBe("UPDATES_LICENSE_REQUIRED");
  });

  it("jwksUrl and FileStorage: keys fetched once, kept, and used offline by a restarted app", async () => {
    const dir = mkdtempSync(join(tmpdir(), "shipkey-sdk-"));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, "license.json");
    const licenseKey = await license({ productSlug: "app", maxMachines: 1 });
    const options = {
      server: server.baseUrl,
      productSlug: "app",
      jwksUrl: "api/products/app/keys",
      machineId: "file-machine",
    };
    const first = new ShipkeyClient({ ...options, storage: new FileStorage(path) });
    await first.activate(licenseKey);
    expect((await first.validate()).offline).toBe(false);
    if (process.platform !== "win32") expect(statSync(path).mode & 0o777).toBe(0o600);

    // The app restarts without a network: the stored keys verify the stored certificate.
    const offline = new ShipkeyClient({
      ...options,
      storage: new FileStorage(path),
      retry: { attempts: 1 },
      fetch: () => Promise.reject(new TypeError("fetch failed")),
    });
    expect(await offline.validate()).toMatchObject({ valid: true, offline: true });
  });

  it("429 from the rate limit: validate answers from the certificate", async () => {
    const limited = await startServer(env({ RATE_LIMIT_LICENSE: "4/1m" }));
    cleanups.push(() => stop(limited));
    const licenseKey = await license({ productSlug: "app", maxMachines: 1 });
    const { sdk } = client({ server: limited.baseUrl });
    await sdk.activate(licenseKey); // activate + checkout
    await sdk.validate();
    await sdk.validate();
    const offline = await sdk.validate();
    expect(offline).toMatchObject({ valid: true, offline: true });
  });
});

describe.each(dialects)(
  "the client SDK when the server stops or rotates its key (%s)",
  (dialect) => {
    let databaseUrl: string;
    let dropDatabase: () => Promise<void>;
    const env = () => ({ DATABASE_URL: databaseUrl, SHIPKEY_MASTER_KEY: masterKey });
    const servers: ServerProcess[] = [];
    const started = async () => {
      const server = await startServer(env());
      servers.push(server);
      return server;
    };

    beforeAll(async () => {
      const testDatabase = await createTestDatabase(dialect);
      databaseUrl = testDatabase.url;
      dropDatabase = () => testDatabase.drop();
      const database = await openDatabase(databaseUrl);
      await migrateToLatest(database.db);
      await createProduct(database.db, { slug: "app", name: "App" });
      await database.close();
    });
    afterAll(async () => {
      for (const server of servers) await stop(server);
      await dropDatabase();
    });

    async function keysOf(server: ServerProcess): Promise<{ keys: JWK[] }> {
      return (await (await fetch(`${server.baseUrl}/api/products/app/keys`)).json()) as {
        keys: JWK[];
      };
    }

    async function newLicense(): Promise<string> {
      const database = await openDatabase(databaseUrl);
      try {
        return (await createLicense(database.db, { productSlug: "app", maxMachines: 5 }))
          .licenseKey;
      } finally {
        await database.close();
      }
    }

    it("offline: the certificate is accepted until exp with an injected clock, then refused", async () => {
      const server = await started();
      const licenseKey = await newLicense();
      let now = Date.now();
      const sdk = new ShipkeyClient({
        server: server.baseUrl,
        productSlug: "app",
        publicKeys: await keysOf(server),
        storage: new MemoryStorage(),
        machineId: "offline-machine",
        clock: () => new Date(now),
        retry: { attempts: 2, baseDelayMs: 10, maxDelayMs: 20 },
      });
      await sdk.activate(licenseKey);
      const { claims } = await sdk.checkout({ ttlSeconds: 3600 });
      await stop(server);

      const offline = await sdk.validate();
      expect(offline).toEqual({
        valid: true,
        offline: true,
        expiresAt: new Date(claims.exp * 1000).toISOString(),
        licenseExpiresAt: null,
        edition: null,
        editionName: null,
        features: [],
        maxMachines: 5,
      });
      now = claims.exp * 1000 - 1000;
      expect((await sdk.validate()).offline).toBe(true);
      now = claims.exp * 1000;
      const error = await codeOf(sdk.validate());
      expect(error.code).toBe("OFFLINE_PERIOD_EXPIRED");
      expect((error.cause as ShipkeyError).code).toBe("NETWORK_ERROR");
    });

    it("key rotation with the CLI: apps pinning the old key follow its endorsement, an unrelated pin refuses", async () => {
      const before = await started();
      const oldKeys = await keysOf(before);
      const licenseKey = await newLicense();
      await stop(before);

      // Rotated with the CLI, as an operator does.
      const prepared = await runCliToExit(["products", "prepare-key", "app"], env());
      expect(prepared).toMatchObject({ code: 0 });
      const promoted = await runCliToExit(["products", "promote-key", "app", "--force"], env());
      expect(promoted).toMatchObject({ code: 0 });

      const after = await started();
      const bothKeys = await keysOf(after);
      expect(bothKeys.keys.map((k) => k.kid)).toEqual([
        expect.not.stringMatching(oldKeys.keys[0]?.kid ?? ""),
        oldKeys.keys[0]?.kid,
      ]);
      const pinned = (keys: { keys: JWK[] }, machineId: string) =>
        new ShipkeyClient({
          server: after.baseUrl,
          productSlug: "app",
          publicKeys: keys,
          storage: new MemoryStorage(),
          machineId,
          retry: { attempts: 1 },
        });
      const updatedApp = pinned({ keys: [oldKeys.keys[0] as JWK, bothKeys.keys[0] as JWK] }, "m-1");
      expect((await updatedApp.activate(licenseKey)).activated).toBe(true);
      expect((await updatedApp.validate()).offline).toBe(false);
      expect((await updatedApp.checkout()).claims.sub).toBe("m-1");

      // Signed answers carry the current key's endorsement by the old one.
      const outdatedApp = pinned(oldKeys, "m-2");
      expect((await outdatedApp.activate(licenseKey)).activated).toBe(true);
      expect((await outdatedApp.validate()).offline).toBe(false);

      const stranger = await signingKey();
      const unrelatedApp = pinned({ keys: [stranger.jwk] }, "m-3");
      expect((await codeOf(unrelatedApp.activate(licenseKey))).code).toBe("SIGNATURE_INVALID");
    });

    it("prepare and promote: an app pinning only the old key, online once in between, verifies the new key's answers with no update", async () => {
      const server = await started();
      const current = (await keysOf(server)).keys.find(
        (k) => (k as JWK & { status?: string }).status === "current",
      );
      expect(current).toBeDefined();
      const licenseKey = await newLicense();
      const database = await openDatabase(databaseUrl);
      const apiKey = await createApiKey(database.db, {
        name: "rotation",
        scopes: [...apiKeyScopes],
      }).finally(() => database.close());
      const admin = (path: string, body: unknown) =>
        fetch(`${server.baseUrl}/api/admin/products/app/keys/${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${apiKey.key}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      const pinnedApp = (storage: MemoryStorage, machineId: string) =>
        new ShipkeyClient({
          server: server.baseUrl,
          productSlug: "app",
          publicKeys: current as JWK, // one JWK, as copied from the dashboard
          storage,
          machineId,
          retry: { attempts: 1 },
        });
      const storage = new MemoryStorage();
      const app = pinnedApp(storage, "rotating-machine");
      await app.activate(licenseKey);

      expect((await admin("prepare", {})).status).toBeLessThan(300);
      expect((await app.validate()).offline).toBe(false); // learns the next key here
      expect(await storage.get("shipkey:app:endorsements")).toBeDefined();
      expect((await admin("promote", { force: true })).status).toBeLessThan(300);

      const newKid = (await keysOf(server)).keys.find(
        (k) => (k as JWK & { status?: string }).status === "current",
      )?.kid;
      expect(newKid).toBeDefined();
      expect(newKid).not.toBe(current?.kid);
      expect((await app.validate()).offline).toBe(false);
      const { certificate } = await app.checkout();
      expect(
        JSON.parse(Buffer.from(certificate.split(".")[0] ?? "", "base64url").toString()).kid,
      ).toBe(newKid);
      // Restarted with the same storage: the learned key is verified again from the pinned one.
      expect((await pinnedApp(storage, "rotating-machine").validate()).offline).toBe(false);
    });
  },
);
