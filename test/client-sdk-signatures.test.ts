import { createHash, webcrypto } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { afterEach, describe, expect, it } from "vitest";
import {
  MemoryStorage,
  ShipkeyClient,
  ShipkeyError,
  signingString,
} from "../packages/client/src/index.js";

/**
 * The SDK against a reference signer written from the published format (docs/client.md): a
 * node:http server that signs its answers exactly as the issue describes. It pins the SDK's
 * side of the contract independently of the server's code; test/client-sdk.test.ts runs the
 * same SDK against the real server process.
 */

type SigningKey = { kid: string; privateKey: webcrypto.CryptoKey; jwk: JWK };

async function signingKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: "EdDSA", use: "sig" };
  return { kid, privateKey: privateKey as webcrypto.CryptoKey, jwk };
}

interface Behaviour {
  key: SigningKey;
  /** Sign with this nonce instead of the request's (a replayed answer). */
  nonce?: string;
  refuse?: { status: number; code: string; error: string; signed: boolean };
  offlineSeconds: number;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function referenceServer(behaviour: Behaviour) {
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      void (async () => {
        const input = JSON.parse(Buffer.concat(chunks).toString()) as Record<string, string>;
        const path = (request.url ?? "/").split("?")[0] ?? "/";
        let status = 200;
        let body: Record<string, unknown>;
        let signed = true;
        if (behaviour.refuse) {
          ({ status } = behaviour.refuse);
          signed = behaviour.refuse.signed;
          body = { error: behaviour.refuse.error, code: behaviour.refuse.code, valid: false };
        } else if (path.endsWith("/activate")) {
          body = {
            success: true,
            message: "Machine activated",
            activation: {
              machineId: input.machineId,
              machineName: null,
              activatedAt: new Date().toISOString(),
            },
            activeMachines: 1,
            maxMachines: 3,
          };
        } else if (path.endsWith("/validate")) {
          body = {
            valid: true,
            edition: "pro",
            editionName: "Pro",
            features: ["export"],
            expiresAt: null,
            maxMachines: 3,
            activeMachines: 1,
          };
        } else if (path.endsWith("/checkout")) {
          const now = Math.floor(Date.now() / 1000);
          const exp = now + behaviour.offlineSeconds;
          const certificate = await new SignJWT({
            product: input.productSlug,
            edition: "pro",
            editionName: "Pro",
            features: ["export"],
            maxMachines: 3,
            licenseExpiresAt: null,
          })
            .setProtectedHeader({
              alg: "EdDSA",
              kid: behaviour.key.kid,
              typ: "shipkey-license+jwt",
            })
            .setSubject(String(input.machineId))
            .setIssuedAt(now)
            .setExpirationTime(exp)
            .sign(behaviour.key.privateKey);
          body = { success: true, certificate, expiresAt: new Date(exp * 1000).toISOString() };
        } else {
          body = { success: true, message: "Machine deactivated", machineId: input.machineId };
        }
        const bytes = Buffer.from(JSON.stringify(body));
        const date = new Date().toUTCString();
        const headers: Record<string, string> = { "content-type": "application/json", date };
        if (signed) {
          const nonce = behaviour.nonce ?? String(request.headers["shipkey-nonce"] ?? "");
          const data = new TextEncoder().encode(signingString({ path, date, body: bytes, nonce }));
          const signature = Buffer.from(
            await webcrypto.subtle.sign("Ed25519", behaviour.key.privateKey, data),
          ).toString("base64");
          headers["shipkey-signature"] =
            `keyid="${behaviour.key.kid}", algorithm="ed25519", signature="${signature}"`;
        }
        response.writeHead(status, headers);
        response.end(bytes);
      })();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  cleanups.push(close);
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close };
}

function client(url: string, keys: JWK[], clock?: () => Date) {
  const storage = new MemoryStorage();
  return {
    storage,
    client: new ShipkeyClient({
      server: url,
      productSlug: "app",
      publicKeys: { keys },
      storage,
      machineId: "machine-1",
      retry: { attempts: 1 },
      ...(clock ? { clock } : {}),
    }),
  };
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ShipkeyError);
  return (error as ShipkeyError).code;
}

describe("the SDK against the reference signer", () => {
  it("verifies answers signed over path, Date, body digest and its own nonce", async () => {
    const key = await signingKey("k1");
    const server = await referenceServer({ key, offlineSeconds: 3600 });
    const { client: app } = client(server.url, [key.jwk]);
    const activated = await app.activate("KEY-1");
    expect(activated).toMatchObject({ activated: true, activeMachines: 1, maxMachines: 3 });
    expect(await app.validate()).toMatchObject({ valid: true, offline: false, edition: "pro" });
    expect((await app.stored())?.certificateExpiresAt).toBeDefined();
    expect(await app.deactivate()).toEqual({
      message: "Machine deactivated",
      machineId: "machine-1",
    });
    expect(await app.stored()).toBeUndefined();
  });

  it("the digest is of the exact body bytes: the signing string matches the format", () => {
    const body = new TextEncoder().encode('{"valid":true}');
    const digest = createHash("sha256").update(body).digest("base64");
    expect(signingString({ path: "/api/license/validate", date: "D", body, nonce: "" })).toBe(
      `(request-target): post /api/license/validate\ndate: D\ndigest: sha-256=${digest}\nnonce: `,
    );
  });

  it("refuses an answer signed for another nonce (replay) and one by an unpinned key", async () => {
    const key = await signingKey("k1");
    const replay = await referenceServer({ key, nonce: "an-old-nonce", offlineSeconds: 3600 });
    expect(await codeOf(client(replay.url, [key.jwk]).client.activate("KEY-1"))).toBe(
      "SIGNATURE_INVALID",
    );
    const stranger = await signingKey("k1");
    const server = await referenceServer({ key: stranger, offlineSeconds: 3600 });
    expect(await codeOf(client(server.url, [key.jwk]).client.activate("KEY-1"))).toBe(
      "SIGNATURE_INVALID",
    );
  });

  it("an app pinning the old and the new key accepts answers by either", async () => {
    const [oldKey, newKey] = [await signingKey("old"), await signingKey("new")];
    const server = await referenceServer({ key: newKey, offlineSeconds: 3600 });
    await client(server.url, [newKey.jwk, oldKey.jwk]).client.activate("KEY-1");
    expect(await codeOf(client(server.url, [oldKey.jwk]).client.activate("KEY-1"))).toBe(
      "SIGNATURE_INVALID",
    );
  });

  it("an unsigned refusal is reported with signed: false and keeps the certificate", async () => {
    const key = await signingKey("k1");
    const behaviour: Behaviour = { key, offlineSeconds: 3600 };
    const server = await referenceServer(behaviour);
    const { client: app } = client(server.url, [key.jwk]);
    await app.activate("KEY-1");
    behaviour.refuse = {
      status: 403,
      code: "LICENSE_EXPIRED",
      error: "License has expired",
      signed: false,
    };
    const error = (await app.validate().catch((e: unknown) => e)) as ShipkeyError;
    expect([error.code, error.signed, error.status]).toEqual(["LICENSE_EXPIRED", false, 403]);
    expect((await app.stored())?.certificateExpiresAt).toBeDefined();

    behaviour.refuse = { ...behaviour.refuse, signed: true };
    const signed = (await app.validate().catch((e: unknown) => e)) as ShipkeyError;
    expect([signed.code, signed.signed]).toEqual(["LICENSE_EXPIRED", true]);
    expect((await app.stored())?.certificateExpiresAt).toBeUndefined();
    await server.close();
    expect(await codeOf(app.validate())).toBe("NETWORK_ERROR");
  });

  it("a storage that cannot be written does not turn a valid answer into an error", async () => {
    const key = await signingKey("k1");
    const server = await referenceServer({ key, offlineSeconds: 3600 });
    const { client: app, storage } = client(server.url, [key.jwk]);
    await app.activate("KEY-1");
    storage.set = () => Promise.reject(new Error("ENOSPC: no space left on device"));
    expect(await app.validate()).toMatchObject({ valid: true, offline: false });
    await server.close();
    expect(await app.validate()).toMatchObject({ valid: true, offline: true });
  });

  it("offline: the certificate holds until exp, a clock set back does not reopen it", async () => {
    const key = await signingKey("k1");
    const server = await referenceServer({ key, offlineSeconds: 3600 });
    let now = Date.now();
    const { client: app } = client(server.url, [key.jwk], () => new Date(now));
    await app.activate("KEY-1");
    await server.close();
    const offline = await app.validate();
    expect(offline).toMatchObject({ valid: true, offline: true, edition: "pro" });
    if (!offline.offline) throw new Error("expected an offline answer");
    const exp = Date.parse(offline.expiresAt);
    now = exp - 5_000;
    expect((await app.validate()).offline).toBe(true);
    now = exp + 1_000;
    expect(await codeOf(app.validate())).toBe("OFFLINE_PERIOD_EXPIRED");
    now = exp - 60_000; // the user sets the clock back
    expect(await codeOf(app.validate())).toBe("OFFLINE_PERIOD_EXPIRED");
  });
});
