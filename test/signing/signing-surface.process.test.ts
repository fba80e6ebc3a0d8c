import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminAccess } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { runCliToExit } from "../helpers/server-process.js";
import { cookieAfter } from "../helpers/dashboard.js";

describe.each(dialects)("signing: OpenAPI, dashboard and CLI (%s)", (dialect) => {
  let f: Fixture;
  let cookie: string;
  let csrf: string;
  let cliFixture: Fixture;
  const masterKey = randomBytes(32);
  let clock = Date.now();
  beforeAll(async () => {
    f = await createFixture(dialect);
    cliFixture = await createFixture(dialect, {
      masterKey,
      keyRefreshMs: 100,
      keyClock: () => clock,
    });
    ({ cookie, csrf } = await adminAccess(f, "keys@example.com"));
  });
  afterAll(async () => {
    await f.close();
    await cliFixture.close();
  });

  const get = (url: string, cookies = cookie) =>
    f.app.inject({ method: "GET", url, headers: { cookie: cookies } });
  const form = (url: string, fields: Record<string, string> = {}) =>
    f.app.inject({
      method: "POST",
      url,
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString(),
    });
  const jwks = async () =>
    (await f.app.inject({ url: `/api/products/${f.product.slug}/keys` })).json<{
      keys: Array<{ kid: string; x: string }>;
    }>().keys;

  it("OpenAPI describes checkout, the keys endpoint, rotation and the signature header", async () => {
    const doc = (await f.app.inject({ url: "/openapi.json" })).json();
    const checkout = doc.paths["/api/license/checkout"].post;
    const body = checkout.requestBody.content["application/json"].schema;
    expect(body.required).toEqual(["licenseKey", "machineId", "productSlug"]);
    expect(body.properties.ttlSeconds).toMatchObject({ type: "integer", minimum: 1 });
    expect(
      Object.keys(checkout.responses["200"].content["application/json"].schema.properties),
    ).toEqual(["success", "certificate", "expiresAt"]);
    for (const path of ["activate", "validate", "deactivate", "checkout"]) {
      const operation = doc.paths[`/api/license/${path}`].post;
      expect(operation.responses["200"].headers["Shipkey-Signature"].description).toMatch(
        /keyid="<kid>", algorithm="ed25519", version="2", signature="<base64>"/,
      );
      expect(operation.responses["4XX"].headers["Shipkey-Signature"]).toBeDefined();
      expect(
        operation.parameters
          .filter((p: { in: string }) => p.in === "header")
          .map((p: { name: string }) => p.name),
      ).toEqual(["shipkey-nonce"]);
    }
    const keys = doc.paths["/api/products/{productSlug}/keys"].get;
    expect(keys.security).toBeUndefined();
    expect(
      keys.responses["200"].content["application/json"].schema.properties.keys.items.required,
    ).toEqual(["kty", "crv", "x", "kid", "alg", "use", "status"]);
    for (const step of ["prepare", "promote"]) {
      expect(doc.paths[`/api/admin/products/{slug}/keys/${step}`].post.security).toEqual([
        { apiKey: ["products:write"] },
      ]);
    }
    expect(doc.paths["/api/admin/products/{slug}/keys/{kid}"].delete).toBeDefined();
  });

  it("the dashboard offers the key set (JWKS) and the current public key as JWK and PEM with copy buttons, never the private key", async () => {
    const page = await get(`/admin/products/${f.product.slug}/keys`);
    expect(page.statusCode).toBe(200);
    const [current] = await jwks();
    expect(page.body).toContain(current?.x);
    expect(page.body).toContain("-----BEGIN PUBLIC KEY-----");
    expect(page.body).toContain('data-copy="jwks"');
    expect(page.body).toContain('data-copy="current-jwk"');
    expect(page.body).toContain('data-copy="current-pem"');
    expect(page.body).not.toMatch(/PRIVATE KEY|&quot;d&quot;/);
    expect((await get("/admin/products")).body).toContain(`/admin/products/${f.product.slug}/keys`);
  });

  it("the dashboard prepares and promotes a key, lists the retired key, removes it, and sets the offline period", async () => {
    const [before] = await jwks();
    const made = await form(`/admin/products/${f.product.slug}/keys/prepare`);
    expect(made.statusCode).toBe(303);
    const prepared = await get(`/admin/products/${f.product.slug}/keys`, cookieAfter(cookie, made));
    expect(prepared.body).toContain("Next key made");
    const [, next] = await jwks();
    expect(prepared.body).toContain(next?.kid);
    // Too early without force: the page says why.
    const early = await form(`/admin/products/${f.product.slug}/keys/promote`);
    expect(early.statusCode).toBe(409);
    expect(early.body).toContain("less than the product&#39;s offline period");
    const promoted = await form(`/admin/products/${f.product.slug}/keys/promote`, {
      force: "true",
    });
    expect(promoted.statusCode).toBe(303);
    const keys = await jwks();
    expect(keys.map((k) => k.kid)).toEqual([next?.kid, before?.kid]);
    const page = await get(`/admin/products/${f.product.slug}/keys`);
    expect(page.body).toContain(`/keys/${before?.kid}/remove`);
    expect(
      (await form(`/admin/products/${f.product.slug}/keys/${before?.kid}/remove`)).statusCode,
    ).toBe(303);
    expect((await jwks()).map((k) => k.kid)).toEqual([keys[0]?.kid]);
    const refused = await form(`/admin/products/${f.product.slug}/keys/offline-period`, {
      offlinePeriodDays: "0.0001",
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain("The offline period must be a number of days from 0.000694");
    const saved = await form(`/admin/products/${f.product.slug}/keys/offline-period`, {
      offlinePeriodDays: "1",
    });
    expect(saved.statusCode).toBe(303);
    const product = await f.app.inject({
      url: `/admin/products/${f.product.slug}/keys`,
      headers: { cookie },
    });
    expect(product.body).toContain('name="offlinePeriodDays"');
    expect(product.body).toMatch(/name="offlinePeriodDays"[^>]*value="1"/);
    // A form without the CSRF token is refused.
    const forged = await f.app.inject({
      method: "POST",
      url: `/admin/products/${f.product.slug}/keys/prepare`,
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: "",
    });
    expect(forged.statusCode).toBe(403);
  });

  it("shipkey products prepare-key and promote-key: running servers sign with the new key; remove-key refuses the current one", async () => {
    // The CLI and the server share the master key, as in a deployment.
    const env = { DATABASE_URL: cliFixture.url, SHIPKEY_MASTER_KEY: masterKey.toString("base64") };
    const before = await cliFixture.app.inject({
      url: `/api/products/${cliFixture.product.slug}/keys`,
    });
    const oldKid = before.json<{ keys: Array<{ kid: string }> }>().keys[0]?.kid;
    const prepared = await runCliToExit(["products", "prepare-key", cliFixture.product.slug], env);
    expect(prepared.stderr).toBe("");
    expect(prepared.code).toBe(0);
    const early = await runCliToExit(["products", "promote-key", cliFixture.product.slug], env);
    expect(early.code).toBe(1);
    expect(early.stderr).toMatch(/less than the product's offline period/);
    const rotated = await runCliToExit(
      ["products", "promote-key", cliFixture.product.slug, "--force"],
      env,
    );
    expect(rotated.stderr).toBe("");
    expect(rotated.code).toBe(0);
    const after = (
      await cliFixture.app.inject({ url: `/api/products/${cliFixture.product.slug}/keys` })
    ).json<{ keys: Array<{ kid: string }> }>().keys;
    expect(after[1]?.kid).toBe(oldKid);
    clock += 100; // the app's refresh window
    const licenseKey = await cliFixture.createLicense();
    const answer = await cliFixture.post(
      "/api/license/activate",
      { licenseKey, machineId: "m", productSlug: cliFixture.product.slug },
      { "shipkey-nonce": "cli-promotion-nonce" },
    );
    expect(String(answer.headers["shipkey-signature"])).toContain(`keyid="${after[0]?.kid}"`);
    const removed = await runCliToExit(
      // --kid=<kid>: a key id may begin with "-", which `--kid <kid>` would read as an option.
      ["products", "remove-key", cliFixture.product.slug, `--kid=${after[0]?.kid ?? ""}`],
      env,
    );
    expect(removed.code).toBe(1);
    expect(removed.stderr).toMatch(/The current signing key cannot be removed/);
    const wrongKey = await runCliToExit(["products", "prepare-key", cliFixture.product.slug], {
      ...env,
      SHIPKEY_MASTER_KEY: randomBytes(32).toString("hex"),
    });
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toMatch(/the master key does not decrypt signing key/);
    const period = await runCliToExit(
      ["products", "set-offline-period", cliFixture.product.slug, "--seconds", "3600"],
      env,
    );
    expect(period.code).toBe(0);
    const row = await cliFixture.db
      .selectFrom("products")
      .select("offline_period_seconds")
      .where("slug", "=", cliFixture.product.slug)
      .executeTakeFirstOrThrow();
    expect(row.offline_period_seconds).toBe(3600);
  });
});
