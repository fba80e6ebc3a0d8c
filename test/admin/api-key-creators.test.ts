import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdmin, createSession } from "../../src/domain/admins/admins.js";
import { createApiKey, hashApiKey } from "../../src/domain/api-keys/api-keys.js";
import { sql } from "kysely";
import { openDatabase } from "../../src/db/database.js";
import { migrateTo, migrateToLatest } from "../../src/db/migrate.js";
import { recordAudit } from "../../src/domain/audit/audit-log.js";
import { newId } from "../../src/lib/ids.js";
import { apiKeyScopes, limits } from "../../src/contracts/vocabulary.js";
import { callWithApiKey } from "../helpers/admin-access.js";
import { runCli } from "../helpers/cli.js";
import { createTestDatabase, dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

interface ListedKey {
  id: string;
  name: string;
  revokedAt: string | null;
  createdBy: { type: string; id: string | null; label: string } | null;
}

/**
 * Who created each key (createdBy) and a revocation with the keys below a key (withCreated):
 * the admin API, on both databases. The CLI's and the dashboard's are in test/cli and
 * test/dashboard.
 */
describe.each(dialects)("API keys: their creators and the keys below them (%s)", (dialect) => {
  let f: Fixture;
  let session: { cookie: string; csrf: string; adminId: string };
  beforeAll(async () => {
    f = await createFixture(dialect);
    const admin = await createAdmin(f.db, {
      email: "creator@example.com",
      password: "a long enough password",
    });
    const created = await createSession(f.db, admin.id);
    session = {
      cookie: `shipkey_session=${created.token}`,
      csrf: created.csrfToken,
      adminId: admin.id,
    };
  });
  afterAll(async () => {
    await f.close();
  });

  const asAdmin = (method: "GET" | "POST", url: string, body?: unknown) =>
    f.app.inject({
      method,
      url,
      headers: {
        cookie: session.cookie,
        "x-csrf-token": session.csrf,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });

  /** A key made by `secret` on the admin API: its id and secret. */
  async function createdBy(
    secret: string,
    name: string,
    extra: Record<string, unknown> = {},
  ): Promise<{ id: string; key: string }> {
    const response = await callWithApiKey(f, secret, "POST", "/api/admin/api-keys", {
      name,
      scopes: ["api-keys:write", "products:read"],
      ...extra,
    });
    expect(response.statusCode, response.body).toBe(201);
    return response.json();
  }

  /** A key made by the signed-in admin on the admin API. */
  async function byAdmin(name: string, extra: Record<string, unknown> = {}) {
    const response = await asAdmin("POST", "/api/admin/api-keys", {
      name,
      scopes: ["api-keys:write", "products:read"],
      ...extra,
    });
    expect(response.statusCode, response.body).toBe(201);
    return response.json() as { id: string; key: string };
  }

  /** A root made by the admin, a child made by it, a grandchild made by the child. */
  async function family(prefix: string) {
    const root = await byAdmin(`${prefix} root`);
    const child = await createdBy(root.key, `${prefix} child`);
    const grandchild = await createdBy(child.key, `${prefix} grandchild`);
    return { root, child, grandchild };
  }

  const listed = async (): Promise<ListedKey[]> =>
    ((await asAdmin("GET", "/api/admin/api-keys")).json() as { items: ListedKey[] }).items;

  const revokedAt = async (id: string) =>
    (
      await f.db
        .selectFrom("api_keys")
        .select("revoked_at")
        .where("id", "=", id)
        .executeTakeFirstOrThrow()
    ).revoked_at;

  /** Whether the key still reaches the admin API (200) or is refused as revoked (401). */
  const status = async (secret: string) =>
    (await callWithApiKey(f, secret, "GET", "/api/admin/products")).statusCode;

  const revokeEntries = (id: string) =>
    f.db
      .selectFrom("audit_log")
      .select(["actor_type", "actor_id", "details"])
      .where("action", "=", "api_key.revoke")
      .where("target_id", "=", id)
      .execute();

  describe("createdBy", () => {
    it("names the admin, the API key or the CLI that created each key; null for a key made before it was recorded", async () => {
      const admin = await byAdmin("made by an admin");
      const child = await createdBy(admin.key, "made by a key");
      const cli = await runCli(f.url, [
        "api-keys",
        "create",
        "--name",
        "made by the CLI",
        "--scopes",
        "products:read",
        "--json",
      ]);
      expect(cli.code, cli.stderr).toBe(0);
      const cliKey = JSON.parse(cli.stdout) as ListedKey;
      expect(cliKey.createdBy).toEqual({
        type: "cli",
        id: null,
        label: expect.stringMatching(/^.+@.+$/),
      });

      const keys = await listed();
      const find = (id: string) => keys.find((k) => k.id === id)?.createdBy;
      expect(find(admin.id)).toEqual({
        type: "admin",
        id: session.adminId,
        label: "creator@example.com",
      });
      expect(find(child.id)).toEqual({ type: "api_key", id: admin.id, label: "made by an admin" });
      expect(find(cliKey.id)).toEqual(cliKey.createdBy);
      // The fixture's keys are written without a creator, as every key made before the column.
      expect(keys.find((k) => k.name === "ci")?.createdBy).toBeNull();
      // The creation's answer says it too.
      const answer = await callWithApiKey(f, admin.key, "POST", "/api/admin/api-keys", {
        name: "answered",
        scopes: ["products:read"],
      });
      expect(answer.json().createdBy).toEqual({
        type: "api_key",
        id: admin.id,
        label: "made by an admin",
      });
    });
  });

  describe("revoking with the keys below", () => {
    it("without withCreated, the keys it created keep working", async () => {
      const { root, child, grandchild } = await family("plain");
      const response = await asAdmin("POST", `/api/admin/api-keys/${root.id}/revoke`);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ id: root.id, alsoRevoked: [] });
      expect(response.json().revokedAt).toMatch(/Z$/);
      expect(await status(root.key)).toBe(401);
      expect(await status(child.key)).toBe(200);
      expect(await status(grandchild.key)).toBe(200);
      expect((await revokeEntries(root.id)).map((e) => JSON.parse(e.details))).toEqual([
        { name: "plain root" },
      ]);
      // withCreated false is the same.
      const other = await family("false");
      await asAdmin("POST", `/api/admin/api-keys/${other.root.id}/revoke`, { withCreated: false });
      expect(await status(other.child.key)).toBe(200);
    });

    it("with withCreated, the keys it created and the keys they created are revoked with it, each audited", async () => {
      const { root, child, grandchild } = await family("tree");
      const sibling = await createdBy(root.key, "tree second child");
      const unrelated = await byAdmin("tree stranger");
      const response = await asAdmin("POST", `/api/admin/api-keys/${root.id}/revoke`, {
        withCreated: true,
      });
      expect(response.statusCode, response.body).toBe(200);
      const answer = response.json() as { alsoRevoked: string[]; revokedAt: string };
      // Creators before the keys they created.
      expect(answer.alsoRevoked).toEqual([child.id, sibling.id, grandchild.id]);
      for (const key of [root, child, sibling, grandchild]) expect(await status(key.key)).toBe(401);
      expect(await status(unrelated.key)).toBe(200);
      // One transaction, one time.
      const times = new Set(
        await Promise.all([root, child, sibling, grandchild].map((k) => revokedAt(k.id))),
      );
      expect(times.size).toBe(1);
      expect(new Date(Number([...times][0])).toISOString()).toBe(answer.revokedAt);

      const rootEntries = await revokeEntries(root.id);
      expect(rootEntries.map((e) => JSON.parse(e.details))).toEqual([
        { name: "tree root", alsoRevoked: [child.id, sibling.id, grandchild.id] },
      ]);
      for (const [key, name] of [
        [child, "tree child"],
        [sibling, "tree second child"],
        [grandchild, "tree grandchild"],
      ] as const) {
        const entries = await revokeEntries(key.id);
        expect(entries).toEqual([
          {
            actor_type: "admin",
            actor_id: session.adminId,
            details: JSON.stringify({ name, revokedWith: root.id }),
          },
        ]);
      }
      expect(await revokeEntries(unrelated.id)).toEqual([]);
    });

    it("skips keys already revoked or expired, but still walks below them", async () => {
      const root = await byAdmin("walk root", { expiresAt: "2099-01-01T00:00:00Z" });
      const revoked = await createdBy(root.key, "walk revoked child", {
        expiresAt: "2099-01-01T00:00:00Z",
      });
      const belowRevoked = await createdBy(revoked.key, "walk below the revoked", {
        expiresAt: "2099-01-01T00:00:00Z",
      });
      const soon = new Date(Date.now() + 60_000).toISOString();
      const expiring = await createdBy(root.key, "walk expired child", { expiresAt: soon });
      await asAdmin("POST", `/api/admin/api-keys/${revoked.id}/revoke`);
      const revokedBefore = await revokedAt(revoked.id);
      // Expired since: its expiry moved into the past by hand.
      await f.db
        .updateTable("api_keys")
        .set({ expires_at: Date.now() - 1000 })
        .where("id", "=", expiring.id)
        .execute();

      const response = await asAdmin("POST", `/api/admin/api-keys/${root.id}/revoke`, {
        withCreated: true,
      });
      expect(response.json().alsoRevoked).toEqual([belowRevoked.id]);
      expect(await revokedAt(revoked.id)).toBe(revokedBefore);
      expect(await revokedAt(expiring.id)).toBeNull();
      expect(await status(belowRevoked.key)).toBe(401);
    });

    it("an already revoked key keeps its revocation time; withCreated revokes the keys below it", async () => {
      const { root, child, grandchild } = await family("late");
      await asAdmin("POST", `/api/admin/api-keys/${root.id}/revoke`);
      const first = await revokedAt(root.id);
      expect(await status(child.key)).toBe(200);
      const again = await asAdmin("POST", `/api/admin/api-keys/${root.id}/revoke`, {
        withCreated: true,
      });
      expect(again.statusCode).toBe(200);
      expect(again.json().alsoRevoked).toEqual([child.id, grandchild.id]);
      expect(await revokedAt(root.id)).toBe(first);
      expect(await status(child.key)).toBe(401);
      expect(await status(grandchild.key)).toBe(401);
    });

    it("an API key may revoke with withCreated the keys below a key it may revoke", async () => {
      // Limited to desktop-app: what it creates is limited to it too.
      const holder = await byAdmin("limited holder", { products: ["desktop-app"] });
      const child = await createdBy(holder.key, "limited child", { products: ["desktop-app"] });
      const grandchild = await createdBy(child.key, "limited grandchild", {
        products: ["desktop-app"],
      });
      const response = await callWithApiKey(
        f,
        holder.key,
        "POST",
        `/api/admin/api-keys/${child.id}/revoke`,
        { withCreated: true },
      );
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json().alsoRevoked).toEqual([grandchild.id]);
      expect(await status(grandchild.key)).toBe(401);
      expect(await status(holder.key)).toBe(200);
      const [entry] = await revokeEntries(grandchild.id);
      expect(entry).toMatchObject({ actor_type: "api_key", actor_id: holder.id });
    });

    it("a key below beyond the caller's products or scopes refuses the whole revocation", async () => {
      const holder = await byAdmin("strict holder", { products: ["desktop-app"] });
      const child = await createdBy(holder.key, "strict child", { products: ["desktop-app"] });
      const grandchild = await createdBy(child.key, "strict grandchild", {
        products: ["desktop-app"],
      });
      const revoke = () =>
        callWithApiKey(f, holder.key, "POST", `/api/admin/api-keys/${child.id}/revoke`, {
          withCreated: true,
        });
      const unchanged = async () => {
        expect(await revokedAt(child.id)).toBeNull();
        expect(await revokedAt(grandchild.id)).toBeNull();
        expect(await revokeEntries(child.id)).toEqual([]);
        expect(await revokeEntries(grandchild.id)).toEqual([]);
      };

      // The grandchild's products widened by hand to every product.
      await f.db
        .updateTable("api_keys")
        .set({ products: null })
        .where("id", "=", grandchild.id)
        .execute();
      const products = await revoke();
      expect(products.statusCode).toBe(403);
      expect(products.json()).toEqual({
        error: "This API key cannot revoke a key for products that are not among its own",
        code: "PRODUCT_NOT_IN_KEY",
      });
      await unchanged();

      // Its products back, its scopes widened by hand.
      await f.db
        .updateTable("api_keys")
        .set({
          products: JSON.stringify([f.product.id]),
          scopes: JSON.stringify(["api-keys:write", "products:read", "audit:read"]),
        })
        .where("id", "=", grandchild.id)
        .execute();
      const scopes = await revoke();
      expect(scopes.statusCode).toBe(403);
      expect(scopes.json()).toEqual({
        error: "This API key cannot revoke a key with scopes it does not hold: audit:read",
        code: "SCOPE_NOT_HELD",
      });
      await unchanged();

      // Without withCreated, the key itself is within its authority.
      const alone = await callWithApiKey(
        f,
        holder.key,
        "POST",
        `/api/admin/api-keys/${child.id}/revoke`,
      );
      expect(alone.statusCode).toBe(200);
      expect(await status(grandchild.key)).toBe(200);
    });

    it(`refuses a key with more than ${limits.keysRevokedWithCreated} keys below it, revoking nothing`, async () => {
      const root = await byAdmin("crowded root");
      const now = Date.now();
      const rows = Array.from({ length: limits.keysRevokedWithCreated + 1 }, (_, i) => ({
        id: newId("key"),
        name: `crowd ${i}`,
        key_hash: hashApiKey(`crowd-${dialect}-${i}-${now}`),
        display_prefix: "shk_crowd",
        scopes: JSON.stringify(["products:read"]),
        created_at: now,
        last_used_at: null,
        expires_at: null,
        revoked_at: null,
        products: null,
        created_by_type: "api_key" as const,
        created_by_id: root.id,
        created_by_label: "crowded root",
      }));
      await f.db.insertInto("api_keys").values(rows).execute();
      const response = await asAdmin("POST", `/api/admin/api-keys/${root.id}/revoke`, {
        withCreated: true,
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        error:
          `More than ${limits.keysRevokedWithCreated} keys were created below this key (by it, ` +
          "or by keys it created); revoke some of them first",
        code: "INVALID_FIELD_VALUE",
        field: "withCreated",
      });
      expect(await revokedAt(root.id)).toBeNull();
      expect(await revokeEntries(root.id)).toEqual([]);
      // One fewer is within the bound.
      await f.db
        .deleteFrom("api_keys")
        .where("id", "=", rows[0]?.id ?? "")
        .execute();
      const fits = await asAdmin("POST", `/api/admin/api-keys/${root.id}/revoke`, {
        withCreated: true,
      });
      expect(fits.statusCode).toBe(200);
      expect(fits.json().alsoRevoked).toHaveLength(limits.keysRevokedWithCreated);
    });

    it("a cycle written by hand ends: each key is visited once", async () => {
      const { root, child, grandchild } = await family("cycle");
      // The root marked as created by its own child.
      await f.db
        .updateTable("api_keys")
        .set({ created_by_type: "api_key", created_by_id: child.id })
        .where("id", "=", root.id)
        .execute();
      const response = await asAdmin("POST", `/api/admin/api-keys/${child.id}/revoke`, {
        withCreated: true,
      });
      expect(response.statusCode).toBe(200);
      // Oldest first among the keys the child created; the child itself is not visited again.
      expect(response.json().alsoRevoked).toEqual([root.id, grandchild.id]);
    });

    it("withCreated must be a boolean, and the body holds nothing else", async () => {
      const key = await createApiKey(f.db, { name: "body checks", scopes: [...apiKeyScopes] });
      const wrong = await asAdmin("POST", `/api/admin/api-keys/${key.id}/revoke`, {
        withCreated: "yes",
      });
      expect(wrong.statusCode).toBe(400);
      expect(wrong.json()).toMatchObject({ code: "INVALID_FIELD_VALUE" });
      const unknown = await asAdmin("POST", `/api/admin/api-keys/${key.id}/revoke`, {
        cascade: true,
      });
      expect(unknown.statusCode).toBe(400);
      expect(await revokedAt(key.id)).toBeNull();
      const unknownKey = await asAdmin("POST", "/api/admin/api-keys/key_nope/revoke", {
        withCreated: true,
      });
      expect(unknownKey.statusCode).toBe(404);
      expect(unknownKey.json().code).toBe("API_KEY_NOT_FOUND");
    });
  });
});

describe.each(dialects)("API keys made before their creators were recorded (%s)", (dialect) => {
  it("0026 takes each key's creator from its api_key.create audit entry", async () => {
    const testDatabase = await createTestDatabase(dialect);
    const { db, close } = await openDatabase(testDatabase.url);
    try {
      await migrateTo(db, "0025_webhook_url_changes");
      const now = Date.now();
      const key = (id: string) => ({
        id,
        name: id,
        key_hash: hashApiKey(`${id}-${now}`),
        display_prefix: "shk_old",
        scopes: JSON.stringify(["api-keys:write"]),
        created_at: now,
      });
      await sql`insert into api_keys (id, name, key_hash, display_prefix, scopes, created_at)
        values ${sql.join(
          ["key_parent", "key_child", "key_nobody"].map((id) => {
            const k = key(id);
            return sql`(${k.id}, ${k.name}, ${k.key_hash}, ${k.display_prefix}, ${k.scopes}, ${k.created_at})`;
          }),
        )}`.execute(db);
      const entry = (
        target: string,
        actor: { type: "admin" | "api_key"; id: string; label: string },
      ) =>
        recordAudit(
          db,
          { ...actor, ip: null },
          "api_key.create",
          { type: "api_key", id: target },
          {},
        );
      await entry("key_parent", { type: "admin", id: "adm_1", label: "ops@example.com" });
      await entry("key_child", { type: "api_key", id: "key_parent", label: "key_parent" });
      await migrateToLatest(db);
      const rows = await db
        .selectFrom("api_keys")
        .select(["id", "created_by_type", "created_by_id", "created_by_label"])
        .orderBy("id")
        .execute();
      expect(rows).toEqual([
        {
          id: "key_child",
          created_by_type: "api_key",
          created_by_id: "key_parent",
          created_by_label: "key_parent",
        },
        { id: "key_nobody", created_by_type: null, created_by_id: null, created_by_label: null },
        {
          id: "key_parent",
          created_by_type: "admin",
          created_by_id: "adm_1",
          created_by_label: "ops@example.com",
        },
      ]);
    } finally {
      await close();
      await testDatabase.drop();
    }
  });
});
