import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { updateLicense } from "../../src/domain/licenses/manage-licenses.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

const day = 86_400;

describe.each(dialects)("POST /api/license/checkout (%s)", (dialect) => {
  let f: Fixture;
  let jwks: JSONWebKeySet;
  beforeAll(async () => {
    f = await createFixture(dialect);
    jwks = (await f.app.inject({ url: `/api/products/${f.product.slug}/keys` })).json();
  });
  afterAll(async () => {
    await f.close();
  });

  const checkout = (body: unknown, headers?: Record<string, string>) =>
    f.post("/api/license/checkout", body, headers);
  const activatedLicense = async (input: Parameters<Fixture["createLicense"]>[0] = {}) => {
    const licenseKey = await f.createLicense(input);
    const body = { licenseKey, machineId: "machine-1", productSlug: f.product.slug };
    expect((await f.post("/api/license/activate", body)).statusCode).toBe(200);
    return body;
  };
  /** Verified by jose alone, with the product's public JWKS: no Shipkey code involved. */
  const verified = (certificate: string) =>
    jwtVerify(certificate, createLocalJWKSet(jwks), {
      algorithms: ["EdDSA"],
      typ: "shipkey-license+jwt",
    });

  it("200 with a certificate jose verifies against the JWKS, holding the documented claims", async () => {
    const body = await activatedLicense({
      edition: "pro",
      editionName: "Pro",
      features: ["export", "sync"],
      maxMachines: 3,
    });
    const before = Math.floor(Date.now() / 1000);
    const response = await checkout(body);
    expect(response.statusCode).toBe(200);
    const answer = response.json<{ success: boolean; certificate: string; expiresAt: string }>();
    expect(Object.keys(answer).sort()).toEqual(["certificate", "expiresAt", "success"]);
    expect(answer.success).toBe(true);
    const { payload, protectedHeader } = await verified(answer.certificate);
    expect(protectedHeader).toEqual({
      alg: "EdDSA",
      kid: jwks.keys[0]?.kid,
      typ: "shipkey-license+jwt",
    });
    expect(payload).toEqual({
      sub: "machine-1",
      product: f.product.slug,
      edition: "pro",
      editionName: "Pro",
      features: ["export", "sync"],
      maxMachines: 3,
      licenseExpiresAt: null,
      iat: expect.any(Number),
      exp: expect.any(Number),
    });
    expect(payload.iat).toBeGreaterThanOrEqual(before);
    // The default offline period: 7 days.
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(7 * day);
    expect(answer.expiresAt).toBe(new Date((payload.exp ?? 0) * 1000).toISOString());
  });

  it("the answer is signed like validate's", async () => {
    const body = await activatedLicense();
    const response = await checkout(body, { "shipkey-nonce": "checkout-test-nonce" });
    expect(response.headers["shipkey-signature"]).toMatch(
      new RegExp(`^keyid="${jwks.keys[0]?.kid}", algorithm="ed25519", version="2", signature="`),
    );
  });

  it("exp never passes the license's own expiry", async () => {
    const expiresAt = Date.now() + 2 * day * 1000;
    const body = await activatedLicense({ expiresAt });
    const { payload } = await verified(
      (await checkout(body)).json<{ certificate: string }>().certificate,
    );
    expect(payload.exp).toBe(Math.floor(expiresAt / 1000));
    expect(payload.licenseExpiresAt).toBe(new Date(expiresAt).toISOString());
  });

  it("ttlSeconds shortens the period; a larger one is capped to it", async () => {
    const body = await activatedLicense();
    const short = await verified(
      (await checkout({ ...body, ttlSeconds: 3600 })).json<{ certificate: string }>().certificate,
    );
    expect((short.payload.exp ?? 0) - (short.payload.iat ?? 0)).toBe(3600);
    const long = await verified(
      (await checkout({ ...body, ttlSeconds: 365 * day })).json<{ certificate: string }>()
        .certificate,
    );
    expect((long.payload.exp ?? 0) - (long.payload.iat ?? 0)).toBe(7 * day);
  });

  it("the product's offline period applies", async () => {
    await f.db
      .updateTable("products")
      .set({ offline_period_seconds: 2 * day })
      .where("id", "=", f.product.id)
      .execute();
    try {
      const body = await activatedLicense();
      const { payload } = await verified(
        (await checkout(body)).json<{ certificate: string }>().certificate,
      );
      expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(2 * day);
    } finally {
      await f.db
        .updateTable("products")
        .set({ offline_period_seconds: 7 * day })
        .where("id", "=", f.product.id)
        .execute();
    }
  });

  it("refreshes last-seen as validate does", async () => {
    const body = await activatedLicense();
    await f.db.updateTable("activations").set({ last_seen_at: 1 }).execute();
    expect((await checkout(body)).statusCode).toBe(200);
    await f.app.lastSeen.flush(f.db);
    const row = await f.db
      .selectFrom("activations")
      .innerJoin("licenses", "licenses.id", "activations.license_id")
      .select("activations.last_seen_at")
      .where("licenses.license_key", "=", body.licenseKey)
      .executeTakeFirstOrThrow();
    expect(row.last_seen_at).toBeGreaterThan(Date.now() - 60_000);
  });

  it("a bad ttlSeconds is a 400 naming the field", async () => {
    const body = await activatedLicense();
    for (const ttlSeconds of ["60", 0, -5, 1.5]) {
      const response = await checkout({ ...body, ttlSeconds });
      expect(response.statusCode).toBe(400);
      expect(response.json<{ error: string }>().error).toMatch(/^ttlSeconds /);
    }
  });

  describe("every failure is validate's: same status, error, code and extra fields", () => {
    const cases: Array<{ name: string; body: () => Promise<Record<string, unknown>> }> = [
      { name: "missing fields", body: async () => ({ licenseKey: "k", machineId: "m" }) },
      {
        name: "unknown key",
        body: async () => ({ licenseKey: "nope", machineId: "m", productSlug: f.product.slug }),
      },
      {
        name: "revoked",
        body: async () => ({
          ...(await activatedLicense()),
          licenseKey: await f.createLicense({ status: "REVOKED" }),
        }),
      },
      {
        name: "suspended after activation",
        body: async () => {
          const body = await activatedLicense();
          await updateLicense(f.db, body.licenseKey, { status: "SUSPENDED" });
          return body;
        },
      },
      {
        name: "expired",
        body: async () => ({
          licenseKey: await f.createLicense({ expiresAt: Date.now() - 1 }),
          machineId: "m",
          productSlug: f.product.slug,
        }),
      },
      {
        name: "other product",
        body: async () => ({
          licenseKey: await f.createLicense({ productSlug: f.otherProduct.slug }),
          machineId: "m",
          productSlug: f.product.slug,
        }),
      },
      {
        name: "machine not activated (canActivate)",
        body: async () => ({ ...(await activatedLicense()), machineId: "other-machine" }),
      },
      {
        name: "over the machine limit",
        body: async () => {
          const body = await activatedLicense({ maxMachines: 2 });
          await f.post("/api/license/activate", { ...body, machineId: "machine-2" });
          await updateLicense(f.db, body.licenseKey, { maxMachines: 1 });
          return body;
        },
      },
      {
        name: "wrong type",
        body: async () => ({ licenseKey: 5, machineId: "m", productSlug: f.product.slug }),
      },
    ];
    it.each(cases)("$name", async ({ body }) => {
      const request = await body();
      const byValidate = await f.post("/api/license/validate", request);
      const byCheckout = await checkout(request);
      expect(byCheckout.statusCode).toBe(byValidate.statusCode);
      expect(byCheckout.statusCode).toBeGreaterThanOrEqual(400);
      const { valid, ...validateFailure } = byValidate.json<Record<string, unknown>>();
      expect(valid).toBe(false);
      expect(byCheckout.json()).toEqual({ ...validateFailure, success: false });
    });
  });

  it("a certificate does not verify with another product's keys", async () => {
    const body = await activatedLicense();
    const other: JSONWebKeySet = (
      await f.app.inject({ url: `/api/products/${f.otherProduct.slug}/keys` })
    ).json();
    const { certificate } = (await checkout(body)).json<{ certificate: string }>();
    expect(decodeProtectedHeader(certificate).kid).toBe(jwks.keys[0]?.kid);
    await expect(jwtVerify(certificate, createLocalJWKSet(other))).rejects.toThrow();
  });
});
