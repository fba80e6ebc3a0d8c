import { createHash, randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { newId } from "../../lib/ids.js";
import { isoOrNull, toIso } from "../../lib/time.js";
import { assertMaxLength, assertSingleLine, limits } from "../limits.js";

export const apiKeyScopes = [
  "releases:write",
  "releases:read",
  "products:read",
  "products:write",
  "licenses:read",
  "licenses:write",
  "api-keys:write",
  "audit:read",
] as const;
export type ApiKeyScope = (typeof apiKeyScopes)[number];

export const apiKeyPrefix = "shk_";

export interface ApiKeyView {
  id: string;
  name: string;
  displayPrefix: string;
  scopes: string[];
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
}

/** The key's secret is a high-entropy token, so a fast deterministic hash is the right store. */
export function hashApiKey(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

export async function createApiKey(
  db: Kysely<DB>,
  input: { name: string; scopes: string[]; expiresAt?: number | null },
  now = Date.now(),
): Promise<ApiKeyView & { key: string }> {
  assertMaxLength("name", input.name, limits.name);
  assertSingleLine("name", input.name);
  if (input.name.trim() === "") throw new ShipkeyError("INVALID_FIELD_VALUE", "name is required");
  if (input.scopes.length === 0) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", "at least one scope is required");
  }
  for (const scope of input.scopes) {
    if (!(apiKeyScopes as readonly string[]).includes(scope)) {
      throw new ShipkeyError(
        "INVALID_FIELD_VALUE",
        `unknown scope "${scope}"; known scopes: ${apiKeyScopes.join(", ")}`,
      );
    }
  }
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
  };
  await db.insertInto("api_keys").values(row).execute();
  return { ...toApiKeyView(row), key };
}

export async function listApiKeys(db: Kysely<DB>): Promise<ApiKeyView[]> {
  const rows = await db.selectFrom("api_keys").selectAll().orderBy("created_at").execute();
  return rows.map(toApiKeyView);
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

export async function requireApiKey(db: Kysely<DB>, id: string): Promise<ApiKeyView> {
  const row = await db.selectFrom("api_keys").selectAll().where("id", "=", id).executeTakeFirst();
  if (!row) throw new ShipkeyError("API_KEY_NOT_FOUND", `No API key with id "${id}"`);
  return toApiKeyView(row);
}

function toApiKeyView(row: DB["api_keys"]): ApiKeyView {
  return {
    id: row.id,
    name: row.name,
    displayPrefix: row.display_prefix,
    scopes: parseScopes(row.scopes),
    createdAt: toIso(row.created_at),
    lastUsedAt: isoOrNull(row.last_used_at),
    expiresAt: isoOrNull(row.expires_at),
    revokedAt: isoOrNull(row.revoked_at),
  };
}

export function parseScopes(json: string): string[] {
  const value: unknown = JSON.parse(json);
  return Array.isArray(value) ? value.filter((s): s is string => typeof s === "string") : [];
}
