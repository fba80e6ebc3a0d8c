import { createHash, randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { errorsOf, ShipkeyError, throwFirst } from "../../errors.js";
import { type ApiKeyScope, apiKeyScopes } from "../../contracts/vocabulary.js";
import { newId } from "../../lib/ids.js";
import { isoOrNull, toIso } from "../../lib/time.js";
import { assertMaxLength, assertSingleLine } from "../limits.js";
import { limits } from "../../contracts/vocabulary.js";
import type { ApiKey } from "../../contracts/api-keys.js";
import type { AuditActor } from "../../contracts/audit.js";

export const apiKeyPrefix = "shk_";

export type ApiKeyView = ApiKey;

/** Who created a key: the audit log's actor (type, id, label), without its address. */
export type KeyCreator = AuditActor;

/** The key's secret is a high-entropy token, so a fast deterministic hash is the right store. */
export function hashApiKey(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/**
 * The ids of the products named by slug, in order, without repeats; each must exist
 * (400 INVALID_FIELD_VALUE naming the first that does not). An empty list is refused: a key
 * for every product omits the list.
 */
export async function resolveKeyProducts(db: Kysely<DB>, slugs: string[]): Promise<string[]> {
  if (slugs.length === 0) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      "products must name at least one product (omit it for a key that may act on every product)",
      { field: "products" },
    );
  }
  const unique = [...new Set(slugs)];
  const rows = await db
    .selectFrom("products")
    .select(["id", "slug"])
    .where("slug", "in", unique)
    .execute();
  return unique.map((slug) => {
    const row = rows.find((r) => r.slug === slug);
    if (!row) {
      throw new ShipkeyError("INVALID_FIELD_VALUE", `products: no product "${slug}"`, {
        field: `products[${slugs.indexOf(slug)}]`,
      });
    }
    return row.id;
  });
}

/** The refusals of a new key's name and scopes, in the order createApiKey reports them. */
export function newApiKeyErrors(input: { name: string; scopes: string[] }): ShipkeyError[] {
  return errorsOf([
    () => assertMaxLength("name", input.name, limits.name),
    () => assertSingleLine("name", input.name),
    () => {
      if (input.name.trim() === "") {
        throw new ShipkeyError("INVALID_FIELD_VALUE", "name is required", { field: "name" });
      }
    },
    () => {
      if (input.scopes.length === 0) {
        throw new ShipkeyError("INVALID_FIELD_VALUE", "at least one scope is required", {
          field: "scopes",
        });
      }
      for (const [i, scope] of input.scopes.entries()) {
        if (!(apiKeyScopes as readonly string[]).includes(scope)) {
          throw new ShipkeyError(
            "INVALID_FIELD_VALUE",
            `unknown scope "${scope}"; known scopes: ${apiKeyScopes.join(", ")}`,
            { field: `scopes[${i}]` },
          );
        }
      }
    },
  ]);
}

export async function createApiKey(
  db: Kysely<DB>,
  input: {
    name: string;
    scopes: string[];
    expiresAt?: number | null;
    /** Product ids (resolveKeyProducts); null or absent: every product. */
    productIds?: string[] | null;
    /** Who creates it; null or absent: unrecorded (shown as null). */
    createdBy?: KeyCreator | null;
  },
  now = Date.now(),
): Promise<ApiKeyView & { key: string }> {
  throwFirst(newApiKeyErrors(input));
  // 32 random bytes, base64url: 256 bits, URL- and header-safe.
  const key = `${apiKeyPrefix}${randomBytes(32).toString("base64url")}`;
  const row = {
    id: newId("key"),
    name: input.name,
    key_hash: hashApiKey(key),
    display_prefix: key.slice(0, apiKeyPrefix.length + 8),
    scopes: JSON.stringify([...new Set(input.scopes)]),
    created_at: now,
    last_used_at: null,
    expires_at: input.expiresAt ?? null,
    revoked_at: null,
    products: input.productIds ? JSON.stringify(input.productIds) : null,
    created_by_type: input.createdBy?.type ?? null,
    created_by_id: input.createdBy?.id ?? null,
    created_by_label: input.createdBy?.label ?? null,
  };
  await db.insertInto("api_keys").values(row).execute();
  return { ...toApiKeyView(row, await productSlugs(db)), key };
}

/**
 * Every key, oldest first; given `withinProducts` (a limited key's product ids), only the keys
 * limited to some of those products.
 */
export async function listApiKeys(
  db: Kysely<DB>,
  withinProducts: readonly string[] | null = null,
): Promise<ApiKeyView[]> {
  const rows = await db.selectFrom("api_keys").selectAll().orderBy("created_at").execute();
  const slugs = await productSlugs(db);
  return rows
    .filter((row) => withinProducts === null || productsWithin(row.products, withinProducts))
    .map((row) => toApiKeyView(row, slugs));
}

/** Whether a key's stored product list is limited to products among `allowed`. */
export function productsWithin(stored: string | null, allowed: readonly string[]): boolean {
  const ids = parseProductIds(stored);
  return ids !== null && ids.every((id) => allowed.includes(id));
}

export async function revokeApiKey(
  db: Kysely<DB>,
  id: string,
  now = Date.now(),
): Promise<ApiKeyView> {
  // Revoking twice keeps the first revocation time.
  await db
    .updateTable("api_keys")
    .set({ revoked_at: now })
    .where("id", "=", id)
    .where("revoked_at", "is", null)
    .execute();
  return requireApiKey(db, id);
}

/**
 * Revokes the keys given by id that are not revoked yet, all at `now`; answers them as revoked,
 * in the order given. A key revoked meanwhile by another transaction is left out.
 */
export async function revokeApiKeys(
  db: Kysely<DB>,
  ids: readonly string[],
  now = Date.now(),
): Promise<ApiKeyView[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .updateTable("api_keys")
    .set({ revoked_at: now })
    .where("id", "in", [...ids])
    .where("revoked_at", "is", null)
    .returningAll()
    .execute();
  const slugs = await productSlugs(db);
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.flatMap((id) => {
    const row = byId.get(id);
    return row ? [toApiKeyView(row, slugs)] : [];
  });
}

/** Row locks on the keys (a no-op write); returns the ids of those not revoked. */
export async function lockKeys(db: Kysely<DB>, ids: readonly string[]): Promise<string[]> {
  const rows = await db
    .updateTable("api_keys")
    .set((eb) => ({ revoked_at: eb.ref("revoked_at") }))
    .where("id", "in", [...ids])
    .returning(["id", "revoked_at"])
    .execute();
  return rows.filter((row) => row.revoked_at === null).map((row) => row.id);
}

/** A key neither revoked nor expired at `now` (epoch ms): one that authenticates. */
export function isLiveKey(
  revokedAt: number | null,
  expiresAt: number | null,
  now: number,
): boolean {
  return revokedAt === null && (expiresAt === null || expiresAt > now);
}

/** A key below another, with what revoking it needs to know. */
export interface KeyBelow {
  id: string;
  scopes: string[];
  /** Product ids, or null for every product. */
  productIds: string[] | null;
  /** Neither revoked nor expired at `now`. */
  active: boolean;
}

/**
 * Every key below the key `id`: the keys it created, the keys those created, and so on, whatever
 * their state, creators before the keys they created. More than `limit` of them is refused (400
 * INVALID_FIELD_VALUE on withCreated), so one revocation stays a bounded transaction. A key is
 * visited once, so a cycle written by hand into the table ends too.
 *
 * `lock` (a revocation, in its transaction): each level's creators are locked before the keys
 * they created are read. A key creating a key locks itself first (actions/api-keys.ts), so a
 * key created during the revocation is either seen here or refused, its creator revoked.
 */
export async function keysBelow(
  db: Kysely<DB>,
  id: string,
  now = Date.now(),
  { limit = limits.keysRevokedWithCreated, lock = false } = {},
): Promise<KeyBelow[]> {
  const found: KeyBelow[] = [];
  const seen = new Set([id]);
  let creators = [id];
  while (creators.length > 0) {
    if (lock) await lockKeys(db, creators);
    const rows = await db
      .selectFrom("api_keys")
      .select(["id", "scopes", "products", "revoked_at", "expires_at"])
      .where("created_by_type", "=", "api_key")
      .where("created_by_id", "in", creators)
      .orderBy("created_at")
      .orderBy("id")
      .limit(limit + 1)
      .execute();
    creators = [];
    for (const row of rows) {
      if (seen.has(row.id)) continue;
      seen.add(row.id);
      if (found.length === limit) {
        throw new ShipkeyError(
          "INVALID_FIELD_VALUE",
          `More than ${limit} keys were created below this key (by it, or by keys it created); ` +
            "revoke some of them first",
          { field: "withCreated" },
        );
      }
      found.push({
        id: row.id,
        scopes: knownScopes(row.scopes),
        productIds: parseProductIds(row.products),
        active: isLiveKey(row.revoked_at, row.expires_at, now),
      });
      creators.push(row.id);
    }
  }
  return found;
}

/**
 * For each key of a listing, how many keys below it (keysBelow, within the listing) are still
 * active: what revoking it with the keys it created would revoke besides itself.
 */
export function activeKeysBelow(
  keys: readonly ApiKeyView[],
  now = Date.now(),
): Map<string, number> {
  const created = new Map<string, ApiKeyView[]>();
  for (const key of keys) {
    const creator = key.createdBy;
    if (creator?.type !== "api_key" || creator.id === null) continue;
    const siblings = created.get(creator.id);
    if (siblings) siblings.push(key);
    else created.set(creator.id, [key]);
  }
  const isActive = (key: ApiKeyView) =>
    isLiveKey(
      key.revokedAt === null ? null : Date.parse(key.revokedAt),
      key.expiresAt === null ? null : Date.parse(key.expiresAt),
      now,
    );
  const counts = new Map<string, number>();
  for (const key of keys) {
    const seen = new Set([key.id]);
    let count = 0;
    const pending = [...(created.get(key.id) ?? [])];
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      if (seen.has(next.id)) continue;
      seen.add(next.id);
      if (isActive(next)) count += 1;
      pending.push(...(created.get(next.id) ?? []));
    }
    counts.set(key.id, count);
  }
  return counts;
}

export async function requireApiKey(db: Kysely<DB>, id: string): Promise<ApiKeyView> {
  const row = await db.selectFrom("api_keys").selectAll().where("id", "=", id).executeTakeFirst();
  if (!row) throw new ShipkeyError("API_KEY_NOT_FOUND", `No API key with id "${id}"`);
  return toApiKeyView(row, await productSlugs(db));
}

/** The stored key's product ids, or null for every product. */
export async function keyProductIds(db: Kysely<DB>, id: string): Promise<string[] | null> {
  const row = await db
    .selectFrom("api_keys")
    .select("products")
    .where("id", "=", id)
    .executeTakeFirst();
  return parseProductIds(row?.products ?? null);
}

async function productSlugs(db: Kysely<DB>): Promise<Map<string, string>> {
  const rows = await db.selectFrom("products").select(["id", "slug"]).execute();
  return new Map(rows.map((row) => [row.id, row.slug]));
}

// A product deleted since the key was made is left out: it can no longer be acted on.
function toApiKeyView(row: DB["api_keys"], slugs: Map<string, string>): ApiKeyView {
  return {
    id: row.id,
    name: row.name,
    displayPrefix: row.display_prefix,
    scopes: knownScopes(row.scopes),
    createdAt: toIso(row.created_at),
    lastUsedAt: isoOrNull(row.last_used_at),
    expiresAt: isoOrNull(row.expires_at),
    revokedAt: isoOrNull(row.revoked_at),
    products:
      parseProductIds(row.products)?.flatMap((id) => {
        const slug = slugs.get(id);
        return slug === undefined ? [] : [slug];
      }) ?? null,
    createdBy:
      row.created_by_type === null
        ? null
        : { type: row.created_by_type, id: row.created_by_id, label: row.created_by_label ?? "" },
  };
}

// A scope this version does not know grants nothing here, so it is not shown either.
function knownScopes(json: string): ApiKeyScope[] {
  return parseScopes(json).filter((s): s is ApiKeyScope =>
    (apiKeyScopes as readonly string[]).includes(s),
  );
}

export function parseScopes(json: string): string[] {
  const value: unknown = JSON.parse(json);
  return Array.isArray(value) ? value.filter((s): s is string => typeof s === "string") : [];
}

/** A stored product list (JSON array of ids) → the ids, or null (every product). */
export function parseProductIds(json: string | null): string[] | null {
  return json === null ? null : parseScopes(json);
}
