import { createPublicKey, generateKeyPairSync } from "node:crypto";
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  FileStorage,
  MemoryStorage,
  ShipkeyClient,
  type ShipkeyClientOptions,
  ShipkeyError,
  thumbprint,
} from "../../packages/client/src/index.js";
import { bodySwappingProxy } from "../helpers/attack-proxies.js";
import {
  type Behaviour,
  endorse,
  referenceServer as startReferenceServer,
  signingKey,
} from "../helpers/reference-signer.js";

/**
 * The outside review's attacks on the SDK, each refused, against the reference signer
 * (helpers/reference-signer.ts). The attacks that need the real server (a body-swapping proxy
 * in front of it, a rotation through the admin API) are in client-sdk.test.ts.
 */

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function referenceServer(behaviour: Behaviour) {
  const server = await startReferenceServer(behaviour);
  cleanups.push(server.close);
  return server;
}

function client(options: Partial<ShipkeyClientOptions> & { server: string }) {
  return new ShipkeyClient({
    productSlug: "app",
    storage: new MemoryStorage(),
    machineId: "machine-1",
    retry: { attempts: 1 },
    ...options,
  });
}

async function errorOf(promise: Promise<unknown>): Promise<ShipkeyError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ShipkeyError);
  return error as ShipkeyError;
}

function tempPath(): string {
  const dir = mkdtempSync(join(tmpdir(), "shipkey-attacks-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, "license.json");
}

describe("the constructor takes what the dashboard offers to copy, or throws at once", () => {
  it("accepts a JWKS, an array, one JWK (with or without kid), a PEM, and each as JSON", async () => {
    const key = await signingKey();
    const server = await referenceServer({ key, offlineSeconds: 3600 });
    const pem = String(
      createPublicKey({
        key: { kty: "OKP", crv: "Ed25519", x: String(key.jwk.x) },
        format: "jwk",
      }).export({ type: "spki", format: "pem" }),
    );
    const withoutKid = { kty: key.jwk.kty, crv: key.jwk.crv, x: key.jwk.x };
    const jwkWithStatus = { ...key.jwk, status: "current" };
    const inputs: ShipkeyClientOptions["publicKeys"][] = [
      { keys: [key.jwk] },
      [key.jwk],
      key.jwk,
      withoutKid,
      jwkWithStatus,
      pem,
      JSON.stringify({ keys: [key.jwk] }),
      JSON.stringify(key.jwk),
      JSON.stringify(pem),
    ];
    for (const publicKeys of inputs) {
      const app = client({ server: server.url, publicKeys });
      // Each form verifies the server's answers: no "key this app does not trust" later.
      expect((await app.activate("KEY-1")).activated).toBe(true);
    }
  });

  it("refuses garbage, RSA, P-256, private keys, an altered kid and an empty set, naming what to paste", async () => {
    const key = await signingKey();
    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const ed = generateKeyPairSync("ed25519");
    const cases: Array<[string, unknown, RegExp]> = [
      ["garbage string", "paste here", /neither JSON nor a PEM/],
      ["number", 42, /not a JWKS, a JWK or a PEM/],
      ["object without keys", { hello: "world" }, /not a JWKS, a JWK or a PEM/],
      ["empty JWKS", { keys: [] }, /empty/],
      ["RSA JWK", rsa.publicKey.export({ format: "jwk" }), /RSA key; Shipkey signs with Ed25519/],
      ["P-256 JWK", ec.publicKey.export({ format: "jwk" }), /EC\/P-256 key/],
      [
        "RSA PEM",
        rsa.publicKey.export({ type: "spki", format: "pem" }),
        /rsa key; Shipkey signs with Ed25519/,
      ],
      ["private JWK", ed.privateKey.export({ format: "jwk" }), /private key, never ship it/],
      [
        "private PEM",
        ed.privateKey.export({ type: "pkcs8", format: "pem" }),
        /private key, never ship it/,
      ],
      ["altered kid", { ...key.jwk, kid: "my-key" }, /kid "my-key" is not this key's thumbprint/],
      ["bad x", { kty: "OKP", crv: "Ed25519", x: "AAAA" }, /x is not an Ed25519 public key/],
    ];
    for (const [name, publicKeys, message] of cases) {
      let thrown: unknown;
      try {
        new ShipkeyClient({
          server: "https://licenses.example.com",
          productSlug: "app",
          storage: new MemoryStorage(),
          publicKeys: publicKeys as ShipkeyClientOptions["publicKeys"],
        });
      } catch (error) {
        thrown = error;
      }
      expect(thrown, name).toBeInstanceOf(TypeError);
      expect((thrown as Error).message, name).toMatch(message);
      expect((thrown as Error).message, name).toMatch(/publicKeys/);
    }
  });
});

describe("answers", () => {
  it("a request body swapped by a proxy (nonce kept) is refused: the signature covers the bytes sent", async () => {
    const key = await signingKey();
    const server = await referenceServer({ key, offlineSeconds: 3600 });
    const proxy = await bodySwappingProxy(server.url, {
      licenseKey: "DONOR-KEY",
      machineId: "donor-machine",
    });
    cleanups.push(proxy.close);
    const app = client({ server: proxy.url, publicKeys: [key.jwk] });
    expect((await errorOf(app.activate("MADE-UP-KEY"))).code).toBe("SIGNATURE_INVALID");
    expect(await app.stored()).toBeUndefined();
    expect((await errorOf(app.validate())).code).toBe("NOT_ACTIVATED");
    // The request really reached the server with the donor's key.
    expect(server.requests.at(-1)?.body).toContain("DONOR-KEY");
  });

  it("a header of another version is refused before anything else", async () => {
    const key = await signingKey();
    const server = await referenceServer({ key, offlineSeconds: 3600, version: "1" });
    const app = client({ server: server.url, publicKeys: [key.jwk] });
    expect((await errorOf(app.activate("KEY-1"))).code).toBe("SIGNATURE_INVALID");
  });

  it("an answer that cannot be verified makes validate use the certificate, as when offline", async () => {
    const key = await signingKey();
    const behaviour: Behaviour = { key, offlineSeconds: 3600 };
    const server = await referenceServer(behaviour);
    const app = client({ server: server.url, publicKeys: [key.jwk] });
    await app.activate("KEY-1");
    behaviour.nonce = "an-old-nonce-replayed-here";
    const offline = await app.validate();
    expect(offline).toMatchObject({ valid: true, offline: true });

    behaviour.nonce = undefined;
    const storage = new MemoryStorage();
    const noCertificate = client({ server: server.url, publicKeys: [key.jwk], storage });
    await storage.set(
      "shipkey:app:state",
      JSON.stringify({ licenseKey: "KEY-3", machineId: "machine-1" }),
    );
    behaviour.nonce = "an-old-nonce-replayed-here";
    expect((await errorOf(noCertificate.validate())).code).toBe("SIGNATURE_INVALID");
  });

  it("activate and deactivate answers must name the machine that asked", async () => {
    const key = await signingKey();
    const behaviour: Behaviour = { key, offlineSeconds: 3600, answerMachineId: "someone-else" };
    const server = await referenceServer(behaviour);
    const app = client({ server: server.url, publicKeys: [key.jwk] });
    expect((await errorOf(app.activate("KEY-1"))).code).toBe("INVALID_RESPONSE");
    expect(await app.stored()).toBeUndefined();
    behaviour.answerMachineId = undefined;
    await app.activate("KEY-1");
    behaviour.answerMachineId = "someone-else";
    expect((await errorOf(app.deactivate())).code).toBe("INVALID_RESPONSE");
    expect(await app.stored()).toBeDefined();
  });
});

describe("a state file copied to another machine", () => {
  it("is refused there with STATE_FROM_ANOTHER_MACHINE; activate on that machine replaces it", async () => {
    const key = await signingKey();
    const server = await referenceServer({ key, offlineSeconds: 3600 });
    const first = tempPath();
    const original = client({
      server: server.url,
      publicKeys: [key.jwk],
      storage: new FileStorage(first),
      machineId: "machine-a",
    });
    await original.activate("KEY-1");
    expect((await original.stored())?.certificateExpiresAt).toBeDefined();

    const copy = tempPath();
    copyFileSync(first, copy);
    const second = client({
      server: server.url,
      publicKeys: [key.jwk],
      storage: new FileStorage(copy),
      machineId: "machine-b",
    });
    for (const call of [
      () => second.validate(),
      () => second.checkout(),
      () => second.deactivate(),
    ]) {
      const error = await errorOf(call());
      expect(error.code).toBe("STATE_FROM_ANOTHER_MACHINE");
      expect(error.message).toMatch(/activate this machine/);
    }
    expect(await second.stored()).toBeUndefined();
    const downloads = `${server.url}/api/downloads/app/2.0.0/MACOS/ARM64/app.zip`;
    expect(await second.updateHeaders(downloads)).toEqual({});
    // Offline, the copied certificate does not help either.
    const offlineSecond = client({
      server: "http://127.0.0.1:9",
      publicKeys: [key.jwk],
      storage: new FileStorage(copy),
      machineId: "machine-b",
    });
    expect((await errorOf(offlineSecond.validate())).code).toBe("STATE_FROM_ANOTHER_MACHINE");

    await second.activate("KEY-1");
    expect(await second.stored()).toMatchObject({ licenseKey: "KEY-1", machineId: "machine-b" });
    expect(await second.validate()).toMatchObject({ valid: true, offline: false });
    // The first machine's own file is untouched.
    expect((await original.validate()).valid).toBe(true);
  });
});

describe("update URLs", () => {
  it("checkForUpdate refuses javascript:, file:, data: and plain http to another host", async () => {
    const key = await signingKey();
    const behaviour: Behaviour = { key, offlineSeconds: 3600 };
    const server = await referenceServer(behaviour);
    const app = client({ server: server.url, publicKeys: [key.jwk] });
    const options = { platform: "MACOS", arch: "ARM64", currentVersion: "1.0.0" } as const;
    for (const url of [
      "javascript:alert(1)",
      "file:///etc/passwd",
      "data:text/html,hi",
      "http://downloads.example.com/app.zip",
      "ftp://downloads.example.com/app.zip",
      "/relative/app.zip",
    ]) {
      behaviour.updateUrl = url;
      const error = await errorOf(app.checkForUpdate(options));
      expect(error.code, url).toBe("UNSAFE_UPDATE_URL");
    }
    for (const url of [
      "https://downloads.example.com/app.zip",
      "http://127.0.0.1:8080/app.zip",
      "http://localhost/app.zip",
      "http://[::1]/app.zip",
    ]) {
      behaviour.updateUrl = url;
      expect((await app.checkForUpdate(options))?.url, url).toBe(url);
    }
  });
});

describe("trust: keys learned only through endorsements", () => {
  it("rotation: an app pinning only the old key learns the next key from an answer, then verifies the new key's answers", async () => {
    const [oldKey, newKey, newerKey] = [await signingKey(), await signingKey(), await signingKey()];
    const behaviour: Behaviour = { key: oldKey, offlineSeconds: 3600 };
    const server = await referenceServer(behaviour);
    const storage = new FileStorage(tempPath());
    const app = client({ server: server.url, publicKeys: [oldKey.jwk], storage });
    await app.activate("KEY-1");

    // Prepared: still signed by the old key, the next key's endorsement announced.
    behaviour.endorsements = [await endorse(oldKey, newKey)];
    expect((await app.validate()).offline).toBe(false);
    // Promoted: signed by the new key; announcing it is no longer needed.
    behaviour.key = newKey;
    behaviour.endorsements = undefined;
    expect((await app.validate()).offline).toBe(false);
    expect((await app.checkout()).claims.sub).toBe("machine-1");

    // A restarted app re-verifies the stored endorsement from its pinned root.
    const restarted = client({ server: server.url, publicKeys: [oldKey.jwk], storage });
    expect((await restarted.validate()).offline).toBe(false);

    // The next rotation: the new key vouches for the one after, announced together.
    behaviour.endorsements = [await endorse(oldKey, newKey), await endorse(newKey, newerKey)];
    behaviour.key = newerKey;
    expect((await restarted.validate()).offline).toBe(false);

    // An app that never saw the endorsements refuses the new key's answers.
    const late = client({ server: server.url, publicKeys: [oldKey.jwk], machineId: "machine-2" });
    behaviour.endorsements = undefined;
    expect((await errorOf(late.activate("KEY-1"))).code).toBe("SIGNATURE_INVALID");
  });

  it("an endorsement signed by an untrusted key, for another product, of another typ or with a kid that is not the thumbprint is ignored", async () => {
    const [pinned, attacker, accomplice] = [
      await signingKey(),
      await signingKey(),
      await signingKey(),
    ];
    const behaviour: Behaviour = { key: attacker, offlineSeconds: 3600 };
    const server = await referenceServer(behaviour);
    const storage = new MemoryStorage();
    const app = client({ server: server.url, publicKeys: [pinned.jwk], storage });
    const forged = [
      await endorse(accomplice, attacker), // by an untrusted key
      await endorse(attacker, attacker), // self-endorsed
      await endorse(pinned, attacker, { product: "other" }),
      await endorse(pinned, attacker, { typ: "JWT" }),
    ];
    for (const endorsement of forged) {
      behaviour.endorsements = [endorsement];
      expect((await errorOf(app.activate("KEY-1"))).code).toBe("SIGNATURE_INVALID");
    }
    // A genuine key's endorsement whose kid is not its thumbprint, signed by the pinned key, and
    // an answer signed under that claimed kid.
    const claimed = await signingKey("claimed-kid");
    behaviour.key = claimed;
    behaviour.endorsements = [await endorse(pinned, claimed, { kid: "claimed-kid" })];
    expect((await errorOf(app.activate("KEY-1"))).code).toBe("SIGNATURE_INVALID");
    expect(await storage.get("shipkey:app:endorsements")).toBeUndefined();
  });

  it("a learned key written into the storage file by hand is not trusted", async () => {
    const [pinned, attacker, accomplice] = [
      await signingKey(),
      await signingKey(),
      await signingKey(),
    ];
    const server = await referenceServer({ key: attacker, offlineSeconds: 3600 });
    const path = tempPath();
    writeFileSync(
      path,
      JSON.stringify({
        "shipkey:app:endorsements": JSON.stringify([
          await endorse(accomplice, attacker),
          JSON.stringify(attacker.jwk),
        ]),
        "shipkey:app:keys": JSON.stringify({ keys: [attacker.jwk] }),
        "shipkey:app:jwks": JSON.stringify({ keys: [attacker.jwk] }),
      }),
    );
    const app = client({
      server: server.url,
      publicKeys: [pinned.jwk],
      storage: new FileStorage(path),
    });
    expect((await errorOf(app.activate("KEY-1"))).code).toBe("SIGNATURE_INVALID");
  });

  it("jwksUrl: a proxy serving its own JWKS after the root was stored, and signing with its key, is refused", async () => {
    const genuine = await signingKey();
    const genuineServer = await referenceServer({ key: genuine, offlineSeconds: 3600 });
    const storage = new MemoryStorage();
    const options = { jwksUrl: "api/products/app/keys", storage };
    const app = client({ server: genuineServer.url, ...options });
    await app.activate("KEY-1");
    const root = await storage.get("shipkey:app:jwks");
    const { kty, crv, x, kid } = genuine.jwk;
    expect(JSON.parse(root ?? "{}")).toEqual({ keys: [{ kty, crv, x, kid }] });

    const attacker = await signingKey();
    const proxy = await referenceServer({
      key: attacker,
      offlineSeconds: 3600,
      jwks: {
        keys: [
          { ...attacker.jwk, status: "current", endorsement: await endorse(attacker, attacker) },
          genuine.jwk,
        ],
      },
      endorsements: [await endorse(attacker, attacker)],
    });
    const proxied = client({ server: proxy.url, ...options, machineId: "machine-1" });
    expect((await errorOf(proxied.checkout())).code).toBe("SIGNATURE_INVALID");
    // validate falls back to the genuine certificate: the forged answer never counts.
    expect(await proxied.validate()).toMatchObject({ valid: true, offline: true });
    expect(proxy.requests.some((r) => r.path === "/api/products/app/keys")).toBe(true);
    expect(await storage.get("shipkey:app:jwks")).toBe(root);
  });

  it("jwksUrl: a refetched JWKS teaches only keys whose endorsement verifies", async () => {
    const [current, next, stray] = [await signingKey(), await signingKey(), await signingKey()];
    const behaviour: Behaviour = { key: current, offlineSeconds: 3600 };
    const server = await referenceServer(behaviour);
    const storage = new MemoryStorage();
    const app = client({ server: server.url, jwksUrl: "api/products/app/keys", storage });
    await app.activate("KEY-1");
    behaviour.jwks = {
      keys: [
        { ...next.jwk, status: "current", endorsement: await endorse(current, next) },
        { ...stray.jwk, status: "next" },
        { ...current.jwk, status: "retired" },
      ],
    };
    behaviour.key = next;
    // A restarted app (the refetch is at most once a minute per instance).
    const restarted = client({ server: server.url, jwksUrl: "api/products/app/keys", storage });
    expect((await restarted.validate()).offline).toBe(false);
    behaviour.key = stray;
    const again = client({ server: server.url, jwksUrl: "api/products/app/keys", storage });
    expect((await errorOf(again.checkout())).code).toBe("SIGNATURE_INVALID");
    expect(thumbprint(String(next.jwk.x))).toBe(next.kid);
  });
});
