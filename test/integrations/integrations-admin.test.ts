import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { resealSecrets } from "../../src/actions/products.js";
import { openIntegrationSecrets } from "../../src/domain/integrations/integrations.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";

const masterKey = randomBytes(32);

describe.each(dialects)("payment integrations: configuration (%s)", (dialect) => {
  let f: Fixture;
  let apiKey: string;
  beforeAll(async () => {
    f = await createFixture(dialect, { masterKey, publicUrl: "https://licenses.example.com" });
    apiKey = (await adminAccess(f, "integrations@example.com")).apiKey;
  });
  afterAll(async () => {
    await f.close();
  });
  beforeEach(async () => {
    await f.db.deleteFrom("integrations").execute();
  });

  const admin = (method: "GET" | "POST" | "PATCH" | "DELETE", url: string, body?: unknown) =>
    callWithApiKey(f, apiKey, method, url, body);

  async function create(body: Record<string, unknown> = {}) {
    const response = await admin("POST", "/api/admin/integrations", {
      product: f.product.slug,
      provider: "stripe",
      secret: "whsec_first_secret_value",
      ...body,
    });
    expect(response.statusCode, response.body).toBe(201);
    return response.json<{ id: string; secrets: Array<{ id: string }>; webhookUrl: string }>();
  }

  it("create answers the webhook URL from PUBLIC_URL and never the secret", async () => {
    const created = await create({ description: "Stripe, EU account" });
    expect(created).toMatchObject({
      product: f.product.slug,
      provider: "stripe",
      mode: "live",
      description: "Stripe, EU account",
      webhookUrl: `https://licenses.example.com/api/integrations/stripe/${created.id}/webhook`,
    });
    expect(created.secrets).toHaveLength(1);
    for (const response of [
      await admin("GET", "/api/admin/integrations"),
      await admin("GET", `/api/admin/integrations/${created.id}`),
    ]) {
      expect(response.statusCode).toBe(200);
      expect(response.body).not.toContain("whsec_first_secret_value");
    }
    const row = await f.db.selectFrom("integration_secrets").selectAll().executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain("first_secret");
    expect(await openIntegrationSecrets(f.db, masterKey, created.id)).toEqual([
      "whsec_first_secret_value",
    ]);
    const audit = await f.db
      .selectFrom("audit_log")
      .selectAll()
      .where("action", "=", "integration.create")
      .where("target_id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(JSON.parse(audit.details)).toEqual({
      product: f.product.slug,
      provider: "stripe",
      mode: "live",
      secretId: created.secrets[0]?.id,
    });
  });

  it("refuses an unknown product, provider or a secret with spaces", async () => {
    const post = (body: Record<string, unknown>) =>
      admin("POST", "/api/admin/integrations", {
        product: f.product.slug,
        provider: "paddle",
        secret: "pdl_ntfset_secret",
        ...body,
      });
    expect((await post({ product: "nope" })).json()).toMatchObject({ code: "PRODUCT_NOT_FOUND" });
    expect((await post({ provider: "gumroad" })).statusCode).toBe(400);
    expect((await post({ secret: "has a space" })).statusCode).toBe(400);
    expect((await post({ secret: "short" })).statusCode).toBe(400);
  });

  it("a rotation: add the new secret beside the old, at most two, then remove the old", async () => {
    const created = await create({ provider: "lemonsqueezy", secret: "old-secret" });
    const [old] = created.secrets;
    const added = await admin("POST", `/api/admin/integrations/${created.id}/secrets`, {
      secret: "new-secret",
    });
    expect(added.statusCode).toBe(201);
    expect(added.json().secrets).toHaveLength(2);
    expect(new Set(await openIntegrationSecrets(f.db, masterKey, created.id))).toEqual(
      new Set(["old-secret", "new-secret"]),
    );
    const third = await admin("POST", `/api/admin/integrations/${created.id}/secrets`, {
      secret: "third-secret",
    });
    expect(third.statusCode).toBe(409);
    expect(third.json().code).toBe("INTEGRATION_SECRETS_FULL");

    const removed = await admin(
      "DELETE",
      `/api/admin/integrations/${created.id}/secrets/${old?.id}`,
    );
    expect(removed.statusCode).toBe(200);
    expect(await openIntegrationSecrets(f.db, masterKey, created.id)).toEqual(["new-secret"]);
    const [last] = removed.json<{ secrets: Array<{ id: string }> }>().secrets;
    const refused = await admin(
      "DELETE",
      `/api/admin/integrations/${created.id}/secrets/${last?.id}`,
    );
    expect(refused.json().code).toBe("INTEGRATION_LAST_SECRET");
    const unknown = await admin("DELETE", `/api/admin/integrations/${created.id}/secrets/isec_x`);
    expect(unknown.json().code).toBe("INTEGRATION_SECRET_NOT_FOUND");
    const actions = await f.db
      .selectFrom("audit_log")
      .select(["action", "details"])
      .where("target_id", "=", created.id)
      .orderBy("at")
      .orderBy("id")
      .execute();
    expect(actions.map((a) => a.action)).toEqual([
      "integration.create",
      "integration.add_secret",
      "integration.remove_secret",
    ]);
    expect(JSON.stringify(actions)).not.toMatch(/old-secret|new-secret/);
  });

  it("update changes the mode and is audited with what changed; delete removes it", async () => {
    const created = await create();
    const patched = await admin("PATCH", `/api/admin/integrations/${created.id}`, {
      mode: "test",
    });
    expect(patched.json()).toMatchObject({ mode: "test" });
    const audit = await f.db
      .selectFrom("audit_log")
      .select("details")
      .where("action", "=", "integration.update")
      .where("target_id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(JSON.parse(audit.details)).toEqual({
      changed: ["mode"],
      changes: { mode: { from: "live", to: "test" } },
    });
    expect((await admin("DELETE", `/api/admin/integrations/${created.id}`)).statusCode).toBe(200);
    const gone = await admin("GET", `/api/admin/integrations/${created.id}`);
    expect(gone.statusCode).toBe(404);
    expect(gone.json().code).toBe("INTEGRATION_NOT_FOUND");
    expect(await f.db.selectFrom("integration_secrets").selectAll().execute()).toEqual([]);
  });

  it("needs products:write; a key limited to products manages none", async () => {
    const reader = (await createApiKey(f.db, { name: "r", scopes: ["products:read"] })).key;
    expect((await callWithApiKey(f, reader, "GET", "/api/admin/integrations")).statusCode).toBe(
      403,
    );
    const limited = (
      await createApiKey(f.db, {
        name: "limited",
        scopes: ["products:write"],
        productIds: [f.product.id],
      })
    ).key;
    const refused = await callWithApiKey(f, limited, "GET", "/api/admin/integrations");
    expect(refused.json().code).toBe("PRODUCT_NOT_IN_KEY");
  });

  it("a master key rotation seals the secrets again", async () => {
    const created = await create({ secret: "whsec_rotating" });
    const next = randomBytes(32);
    const cli = { type: "cli" as const, id: null, label: "test", ip: null };
    expect(await resealSecrets(f.db, cli, masterKey, next)).toMatchObject({
      integrationSecrets: 1,
    });
    try {
      expect(await openIntegrationSecrets(f.db, next, created.id)).toEqual(["whsec_rotating"]);
      await expect(openIntegrationSecrets(f.db, masterKey, created.id)).rejects.toThrow(
        /does not open/,
      );
    } finally {
      await resealSecrets(f.db, cli, next, masterKey);
    }
  });
});
