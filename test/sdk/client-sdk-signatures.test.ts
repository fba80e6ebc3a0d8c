import { createHash } from "node:crypto";
import type { JWK } from "jose";
import { afterEach, describe, expect, it } from "vitest";
import {
  MemoryStorage,
  ShipkeyClient,
  ShipkeyError,
  signingString,
} from "../../packages/client/src/index.js";
import {
  type Behaviour,
  referenceServer as startReferenceServer,
  signingKey,
} from "../helpers/reference-signer.js";

/**
 * The SDK against a reference signer written from the published format (docs/client.md): a
 * node:http server that signs its answers exactly as the issue describes. It pins the SDK's
 * side of the contract independently of the server's code; test/sdk/client-sdk.process.test.ts runs the
 * same SDK against the real server process.
 */

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function referenceServer(behaviour: Behaviour) {
  const server = await startReferenceServer(behaviour);
  cleanups.push(server.close);
  return server;
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
    const key = await signingKey();
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

  it("the digests are of the exact body bytes: the signing string matches the format", () => {
    const requestBody = new TextEncoder().encode('{"licenseKey":"K"}');
    const body = new TextEncoder().encode('{"valid":true}');
    const digest = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("base64");
    expect(
      signingString({
        path: "/api/license/validate",
        status: 200,
        date: "D",
        nonce: "N",
        requestBody,
        body,
      }),
    ).toBe(
      [
        "shipkey-signature: v2",
        "(request-target): post /api/license/validate",
        "status: 200",
        "date: D",
        "nonce: N",
        `request-digest: sha-256=${digest(requestBody)}`,
        `digest: sha-256=${digest(body)}`,
      ].join("\n"),
    );
  });

  it("refuses an answer signed for another nonce (replay) and one by an unpinned key", async () => {
    const key = await signingKey();
    const replay = await referenceServer({ key, nonce: "an-old-nonce", offlineSeconds: 3600 });
    expect(await codeOf(client(replay.url, [key.jwk]).client.activate("KEY-1"))).toBe(
      "SIGNATURE_INVALID",
    );
    const stranger = await signingKey(key.kid); // claims the pinned kid
    const server = await referenceServer({ key: stranger, offlineSeconds: 3600 });
    expect(await codeOf(client(server.url, [key.jwk]).client.activate("KEY-1"))).toBe(
      "SIGNATURE_INVALID",
    );
  });

  it("an app pinning the old and the new key accepts answers by either", async () => {
    const [oldKey, newKey] = [await signingKey(), await signingKey()];
    const server = await referenceServer({ key: newKey, offlineSeconds: 3600 });
    await client(server.url, [newKey.jwk, oldKey.jwk]).client.activate("KEY-1");
    expect(await codeOf(client(server.url, [oldKey.jwk]).client.activate("KEY-1"))).toBe(
      "SIGNATURE_INVALID",
    );
  });

  it("an unsigned refusal is reported with signed: false and keeps the certificate", async () => {
    const key = await signingKey();
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
    const key = await signingKey();
    const server = await referenceServer({ key, offlineSeconds: 3600 });
    const { client: app, storage } = client(server.url, [key.jwk]);
    await app.activate("KEY-1");
    storage.set = () => Promise.reject(new Error("ENOSPC: no space left on device"));
    expect(await app.validate()).toMatchObject({ valid: true, offline: false });
    await server.close();
    expect(await app.validate()).toMatchObject({ valid: true, offline: true });
  });

  it("offline: the certificate holds until exp, a clock set back does not reopen it", async () => {
    const key = await signingKey();
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
