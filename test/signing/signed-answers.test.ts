import { createHash, createPublicKey, verify } from "node:crypto";
import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

interface Jwk {
  kty: string;
  crv: string;
  x: string;
  kid: string;
}

const nonce = "Zm9yLXRoaXMtcmVxdWVzdA";

/**
 * Verifies an answer as a client in any language would, from docs/client.md only: the seven
 * lines rebuilt from the request sent and the raw answer, Ed25519 with the JWKS key named by
 * keyid.
 */
function verifyAnswer(
  response: LightMyRequestResponse,
  request: { path: string; nonce: string; body: string },
  keys: Jwk[],
): { kid: string; ok: boolean } {
  const header = response.headers["shipkey-signature"];
  if (typeof header !== "string") throw new Error("unsigned answer");
  const match =
    /^keyid="([^"]+)", algorithm="ed25519", version="2", signature="([A-Za-z0-9+/=]+)"$/.exec(
      header,
    );
  if (!match?.[1] || !match[2]) throw new Error(`malformed header: ${header}`);
  const kid = match[1];
  const jwk = keys.find((k) => k.kid === kid);
  if (!jwk) return { kid, ok: false };
  const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("base64");
  const lines = [
    "shipkey-signature: v2",
    `(request-target): post ${request.path}`,
    `status: ${response.statusCode}`,
    `date: ${String(response.headers.date)}`,
    `nonce: ${request.nonce}`,
    `request-digest: sha-256=${sha256(request.body)}`,
    `digest: sha-256=${sha256(response.rawPayload)}`,
  ].join("\n");
  const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: jwk.x }, format: "jwk" });
  return { kid, ok: verify(null, Buffer.from(lines), key, Buffer.from(match[2], "base64")) };
}

describe.each(dialects)("signed license answers (%s)", (dialect) => {
  let f: Fixture;
  let keys: Jwk[];
  beforeAll(async () => {
    f = await createFixture(dialect);
    keys = (await f.app.inject({ url: `/api/products/${f.product.slug}/keys` })).json<{
      keys: Jwk[];
    }>().keys;
  });
  afterAll(async () => {
    await f.close();
  });

  /** POSTs exactly `body` (a string) with a nonce, as a verifying client does. */
  const send = (path: string, body: string, headers: Record<string, string> = {}) =>
    f.app.inject({
      method: "POST",
      url: path,
      headers: { "content-type": "application/json", "shipkey-nonce": nonce, ...headers },
      payload: body,
    });

  const activated = async () => {
    const licenseKey = await f.createLicense();
    const body = { licenseKey, machineId: "machine-1", productSlug: f.product.slug };
    expect((await f.post("/api/license/activate", body)).statusCode).toBe(200);
    return JSON.stringify(body);
  };

  it("the JWKS lists one current Ed25519 key with the documented members", async () => {
    const response = await f.app.inject({ url: `/api/products/${f.product.slug}/keys` });
    expect(response.statusCode).toBe(200);
    expect(response.headers["cache-control"]).toBe("no-cache");
    expect(keys).toHaveLength(1);
    expect(keys[0]).toEqual({
      kty: "OKP",
      crv: "Ed25519",
      x: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      kid: expect.any(String),
      alg: "EdDSA",
      use: "sig",
      status: "current",
    });
  });

  it("an unknown product's JWKS is 404", async () => {
    const response = await f.app.inject({ url: "/api/products/no-such-app/keys" });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: "Product not found", code: "PRODUCT_NOT_FOUND" });
  });

  it("validate: signed over the seven lines, bound to the nonce, the path and the status", async () => {
    const body = await activated();
    const path = "/api/license/validate";
    const response = await send(path, body);
    expect(response.statusCode).toBe(200);
    expect(verifyAnswer(response, { path, nonce, body }, keys)).toEqual({
      kid: keys[0]?.kid,
      ok: true,
    });
    expect(verifyAnswer(response, { path, nonce: `${nonce}x`, body }, keys).ok).toBe(false);
    expect(verifyAnswer(response, { path: "/api/license/activate", nonce, body }, keys).ok).toBe(
      false,
    );
    const otherStatus = { ...response, statusCode: 403 } as LightMyRequestResponse;
    expect(verifyAnswer(otherStatus, { path, nonce, body }, keys).ok).toBe(false);
  });

  it("bound to the exact request bytes: a proxy that swaps the key or the machine gets an answer that does not verify for what the app sent", async () => {
    // The donor's license is real and active; the app sent a made-up key.
    const donor = await activated();
    const sent = JSON.stringify({
      licenseKey: "TOTALLY-FAKE-KEY-1",
      machineId: "machine-1",
      productSlug: f.product.slug,
    });
    const path = "/api/license/validate";
    const answered = await send(path, donor); // what the proxy forwarded instead
    expect(answered.statusCode).toBe(200);
    expect(verifyAnswer(answered, { path, nonce, body: donor }, keys).ok).toBe(true);
    expect(verifyAnswer(answered, { path, nonce, body: sent }, keys).ok).toBe(false);
    // Even whitespace counts: the digest is over the bytes, not the JSON's meaning.
    expect(verifyAnswer(answered, { path, nonce, body: ` ${donor}` }, keys).ok).toBe(false);
  });

  it("the path excludes the query string", async () => {
    const body = await activated();
    const response = await send("/api/license/validate?x=1", body);
    expect(response.statusCode).toBe(200);
    expect(verifyAnswer(response, { path: "/api/license/validate", nonce, body }, keys).ok).toBe(
      true,
    );
  });

  it("the body is exactly the spec's (no field added)", async () => {
    const response = await send("/api/license/validate", await activated());
    expect(Object.keys(response.json<object>()).sort()).toEqual(
      [
        "activeMachines",
        "editionName",
        "edition",
        "expiresAt",
        "features",
        "maxMachines",
        "valid",
      ].sort(),
    );
  });

  it("a tampered answer body does not verify", async () => {
    const body = await activated();
    const path = "/api/license/validate";
    const response = await send(path, body);
    const forged = { ...response, rawPayload: Buffer.from(response.payload.replace("3", "9")) };
    expect(verifyAnswer(forged as LightMyRequestResponse, { path, nonce, body }, keys).ok).toBe(
      false,
    );
  });

  it("activate, deactivate, checkout and their failures are signed when productSlug names the product", async () => {
    const licenseKey = await f.createLicense();
    const slug = f.product.slug;
    const cases: Array<[string, Record<string, unknown>, number]> = [
      ["/api/license/activate", { licenseKey, machineId: "m-a", productSlug: slug }, 200],
      ["/api/license/activate", { licenseKey, machineId: "m-a", productSlug: slug }, 200],
      ["/api/license/checkout", { licenseKey, machineId: "m-a", productSlug: slug }, 200],
      ["/api/license/validate", { licenseKey, machineId: "m-b", productSlug: slug }, 403],
      ["/api/license/validate", { licenseKey: "nope", machineId: "m", productSlug: slug }, 404],
      ["/api/license/activate", { licenseKey, productSlug: slug }, 400],
      ["/api/license/deactivate", { licenseKey, machineId: "m-a", productSlug: slug }, 200],
      ["/api/license/deactivate", { licenseKey, machineId: "m-a", productSlug: slug }, 404],
    ];
    for (const [path, fields, status] of cases) {
      const body = JSON.stringify(fields);
      const response = await send(path, body);
      expect(response.statusCode, `${path} ${body}`).toBe(status);
      expect(verifyAnswer(response, { path, nonce, body }, keys).ok, `${path} ${body}`).toBe(true);
    }
  });

  it("a license of another product, asked for this product: signed by the product asked for", async () => {
    const licenseKey = await f.createLicense({ productSlug: f.otherProduct.slug });
    const body = JSON.stringify({ licenseKey, machineId: "m", productSlug: f.product.slug });
    const response = await send("/api/license/validate", body);
    expect(response.json<{ code: string }>().code).toBe("LICENSE_PRODUCT_MISMATCH");
    expect(verifyAnswer(response, { path: "/api/license/validate", nonce, body }, keys).ok).toBe(
      true,
    );
  });

  it("without a nonce nothing is signed, and the body is the same", async () => {
    const body = await activated();
    const plain = await f.app.inject({
      method: "POST",
      url: "/api/license/validate",
      headers: { "content-type": "application/json" },
      payload: body,
    });
    expect(plain.statusCode).toBe(200);
    expect(plain.headers["shipkey-signature"]).toBeUndefined();
    const signed = await send("/api/license/validate", body);
    expect(signed.headers["shipkey-signature"]).toBeDefined();
    expect(signed.payload).toBe(plain.payload);
  });

  it.each([
    ["too short", "abc"],
    ["too long", "a".repeat(129)],
    ["outside the alphabet", "nonce with spaces!!"],
    ["two headers joined by Node", `${nonce}, ${nonce}`],
  ])(
    "a malformed nonce (%s) is 400 INVALID_NONCE, unsigned, and changes nothing",
    async (_, bad) => {
      const licenseKey = await f.createLicense();
      const response = await send(
        "/api/license/activate",
        JSON.stringify({ licenseKey, machineId: "m-n", productSlug: f.product.slug }),
        { "shipkey-nonce": bad },
      );
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        error: "Shipkey-Nonce must be 16 to 128 characters: letters, digits, - or _",
        code: "INVALID_NONCE",
        success: false,
      });
      expect(response.headers["shipkey-signature"]).toBeUndefined();
      const license = await f.db
        .selectFrom("licenses")
        .select("active_machines")
        .where("license_key", "=", licenseKey)
        .executeTakeFirstOrThrow();
      expect(license.active_machines).toBe(0);
    },
  );

  it("answers with no known productSlug are unsigned, whatever the license key", async () => {
    const realKey = await f.createLicense();
    const unsigned: Array<[string, string, string]> = [
      ["/api/license/validate", "not json", "application/json"],
      ["/api/license/validate", JSON.stringify([1]), "application/json"],
      [
        "/api/license/validate",
        JSON.stringify({ licenseKey: realKey, machineId: "m", productSlug: "no-such-app" }),
        "application/json",
      ],
      // Deactivate without productSlug: the license's product is never looked up to sign.
      [
        "/api/license/deactivate",
        JSON.stringify({ licenseKey: realKey, machineId: "m" }),
        "application/json",
      ],
      ["/api/license/validate", "{}", "text/plain"],
    ];
    for (const [url, payload, type] of unsigned) {
      const response = await send(url, payload, { "content-type": type });
      expect(response.statusCode).toBeGreaterThanOrEqual(400);
      expect(response.headers["shipkey-signature"], payload).toBeUndefined();
    }
  });

  it("no existence oracle: a real key and a guessed one under an unknown product get the same headers", async () => {
    const realKey = await f.createLicense();
    const probe = (licenseKey: string) =>
      send(
        "/api/license/deactivate",
        JSON.stringify({ licenseKey, machineId: "m", productSlug: "guessed-product" }),
      );
    const [real, guessed] = [await probe(realKey), await probe("GUESS-0000-0000")];
    const signingHeaders = (r: LightMyRequestResponse) =>
      Object.keys(r.headers)
        .filter((name) => name.startsWith("shipkey-"))
        .sort();
    expect(signingHeaders(real)).toEqual(signingHeaders(guessed));
    expect(real.headers["shipkey-signature"]).toBeUndefined();
  });

  it("the Date header signed is the one sent, once", async () => {
    const response = await send("/api/license/validate", await activated());
    expect(typeof response.headers.date).toBe("string");
    expect(Date.parse(String(response.headers.date))).toBeGreaterThan(Date.now() - 60_000);
  });
});
