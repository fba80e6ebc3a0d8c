import { createHash, createPublicKey, verify } from "node:crypto";
import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dialects } from "./helpers/database.js";
import { createFixture, type Fixture } from "./helpers/fixture.js";

interface Jwk {
  kty: string;
  crv: string;
  x: string;
  kid: string;
  alg: string;
  use: string;
}

/**
 * Verifies an answer as a client in any language would, from the documented format only: the
 * four lines rebuilt from the raw response, Ed25519 with the JWKS key named by keyid.
 */
function verifyAnswer(
  response: LightMyRequestResponse,
  path: string,
  nonce: string,
  keys: Jwk[],
): { kid: string; ok: boolean } {
  const header = response.headers["shipkey-signature"];
  if (typeof header !== "string") throw new Error("unsigned answer");
  const match = /^keyid="([^"]+)", algorithm="ed25519", signature="([A-Za-z0-9+/=]+)"$/.exec(
    header,
  );
  if (!match?.[1] || !match[2]) throw new Error(`malformed header: ${header}`);
  const kid = match[1];
  const jwk = keys.find((k) => k.kid === kid);
  if (!jwk) return { kid, ok: false };
  const digest = createHash("sha256").update(response.rawPayload).digest("base64");
  const lines = [
    `(request-target): post ${path}`,
    `date: ${String(response.headers.date)}`,
    `digest: sha-256=${digest}`,
    `nonce: ${nonce}`,
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

  const activated = async () => {
    const licenseKey = await f.createLicense();
    const body = { licenseKey, machineId: "machine-1", productSlug: f.product.slug };
    expect((await f.post("/api/license/activate", body)).statusCode).toBe(200);
    return body;
  };

  it("the JWKS lists one Ed25519 key with the documented members", async () => {
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
    });
    expect(Object.keys(keys[0] ?? {}).sort()).toEqual(["alg", "crv", "kid", "kty", "use", "x"]);
  });

  it("an unknown product's JWKS is 404", async () => {
    const response = await f.app.inject({ url: "/api/products/no-such-app/keys" });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: "Product not found", code: "PRODUCT_NOT_FOUND" });
  });

  it("validate: signed over the four lines, with the nonce sent", async () => {
    const body = await activated();
    const response = await f.post("/api/license/validate", body, { "shipkey-nonce": "n-123" });
    expect(response.statusCode).toBe(200);
    expect(verifyAnswer(response, "/api/license/validate", "n-123", keys)).toEqual({
      kid: keys[0]?.kid,
      ok: true,
    });
    // Bound to the nonce: the same answer does not verify for another one.
    expect(verifyAnswer(response, "/api/license/validate", "n-124", keys).ok).toBe(false);
    // Bound to the path.
    expect(verifyAnswer(response, "/api/license/activate", "n-123", keys).ok).toBe(false);
  });

  it("without a nonce the last line is 'nonce: ' with nothing after it", async () => {
    const body = await activated();
    const response = await f.post("/api/license/validate", body);
    expect(verifyAnswer(response, "/api/license/validate", "", keys).ok).toBe(true);
  });

  it("the path excludes the query string", async () => {
    const body = await activated();
    const response = await f.post("/api/license/validate?x=1", body, { "shipkey-nonce": "q" });
    expect(response.statusCode).toBe(200);
    expect(verifyAnswer(response, "/api/license/validate", "q", keys).ok).toBe(true);
  });

  it("the body is exactly the spec's (no field added)", async () => {
    const body = await activated();
    const response = await f.post("/api/license/validate", body, { "shipkey-nonce": "b" });
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

  it("a tampered body does not verify", async () => {
    const body = await activated();
    const response = await f.post("/api/license/validate", body, { "shipkey-nonce": "t" });
    const forged = { ...response, rawPayload: Buffer.from(response.payload.replace("3", "9")) };
    expect(
      verifyAnswer(forged as LightMyRequestResponse, "/api/license/validate", "t", keys).ok,
    ).toBe(false);
  });

  it("activate, deactivate and their failures are signed", async () => {
    const licenseKey = await f.createLicense();
    const cases: Array<[string, Record<string, unknown>, number]> = [
      ["/api/license/activate", { licenseKey, machineId: "m-a", productSlug: f.product.slug }, 200],
      ["/api/license/activate", { licenseKey, machineId: "m-a", productSlug: f.product.slug }, 200],
      ["/api/license/validate", { licenseKey, machineId: "m-b", productSlug: f.product.slug }, 403],
      [
        "/api/license/validate",
        { licenseKey: "nope", machineId: "m", productSlug: f.product.slug },
        404,
      ],
      ["/api/license/activate", { licenseKey, productSlug: f.product.slug }, 400],
      [
        "/api/license/deactivate",
        { licenseKey, machineId: "m-a", productSlug: f.product.slug },
        200,
      ],
      // No productSlug: the license's product signs.
      ["/api/license/deactivate", { licenseKey, machineId: "m-a" }, 404],
    ];
    for (const [path, body, status] of cases) {
      const response = await f.post(path, body, { "shipkey-nonce": "c" });
      expect(response.statusCode, `${path} ${JSON.stringify(body)}`).toBe(status);
      expect(verifyAnswer(response, path, "c", keys).ok, `${path} ${JSON.stringify(body)}`).toBe(
        true,
      );
    }
  });

  it("a license of another product, asked for this product: signed by the product asked for", async () => {
    const licenseKey = await f.createLicense({ productSlug: f.otherProduct.slug });
    const response = await f.post(
      "/api/license/validate",
      { licenseKey, machineId: "m", productSlug: f.product.slug },
      { "shipkey-nonce": "p" },
    );
    expect(response.json<{ code: string }>().code).toBe("LICENSE_PRODUCT_MISMATCH");
    expect(verifyAnswer(response, "/api/license/validate", "p", keys).ok).toBe(true);
  });

  it("answers with no known product are unsigned", async () => {
    const unsigned: Array<[string, string, Record<string, string>]> = [
      ["/api/license/validate", "not json", { "content-type": "application/json" }],
      ["/api/license/validate", JSON.stringify([1]), { "content-type": "application/json" }],
      [
        "/api/license/validate",
        JSON.stringify({ licenseKey: "nope", machineId: "m", productSlug: "no-such-app" }),
        { "content-type": "application/json" },
      ],
      [
        "/api/license/deactivate",
        JSON.stringify({ licenseKey: "nope", machineId: "m" }),
        { "content-type": "application/json" },
      ],
      ["/api/license/validate", "{}", { "content-type": "text/plain" }],
    ];
    for (const [url, payload, headers] of unsigned) {
      const response = await f.app.inject({ method: "POST", url, payload, headers });
      expect(response.statusCode).toBeGreaterThanOrEqual(400);
      expect(response.headers["shipkey-signature"], payload).toBeUndefined();
    }
  });

  it("the Date header signed is the one sent, once", async () => {
    const body = await activated();
    const response = await f.post("/api/license/validate", body);
    expect(typeof response.headers.date).toBe("string");
    expect(Date.parse(String(response.headers.date))).toBeGreaterThan(Date.now() - 60_000);
  });
});
