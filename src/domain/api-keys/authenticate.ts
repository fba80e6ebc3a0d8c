import type { Kysely } from "kysely";
import { compileOnce } from "../../db/compiled-query.js";
import type { ApiKeysTable, DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { hashApiKey, isLiveKey, parseProductIds, parseScopes } from "./api-keys.js";
import { type ApiKeyScope } from "../../contracts/vocabulary.js";

// last_used_at is informational: writing it at most once a minute per key keeps publish bursts
// from turning every authenticated request into an extra write.
const lastUsedResolutionMs = 60_000;

// RFC 7235: the scheme name is case-insensitive; exactly one space-separated token follows.
const bearerPattern = /^bearer +([^\s]+) *$/i;

/**
 * Resolves an Authorization header to an API key holding `scope`.
 * Throws 401 INVALID_API_KEY (missing, malformed, unknown, revoked or expired) or 403 MISSING_SCOPE.
 * The lookup is by SHA-256 of the presented secret, so no secret-dependent comparison happens
 * in this process and response time does not depend on how much of a key was right.
 */
export async function authenticateApiKey(
  db: Kysely<DB>,
  authorization: string | undefined,
  scope: ApiKeyScope,
  now = Date.now(),
): Promise<{ apiKeyId: string; name: string; productIds: string[] | null }> {
  // A header far longer than any key is not parsed.
  const token =
    authorization === undefined || authorization.length > 1024
      ? undefined
      : bearerPattern.exec(authorization)?.[1];
  if (token === undefined || token.length > 512) throw ShipkeyError.spec("INVALID_API_KEY");
  const [key] = (await findKeyByHash(db, { keyHash: hashApiKey(token) })).rows;
  if (!key || !isLiveKey(key.revoked_at, key.expires_at, now)) {
    throw ShipkeyError.spec("INVALID_API_KEY");
  }
  if (key.last_used_at === null || now - key.last_used_at >= lastUsedResolutionMs) {
    await db.updateTable("api_keys").set({ last_used_at: now }).where("id", "=", key.id).execute();
  }
  if (!parseScopes(key.scopes).includes(scope)) throw ShipkeyError.spec("MISSING_SCOPE");
  return { apiKeyId: key.id, name: key.name, productIds: parseProductIds(key.products) };
}

const findKeyByHash = compileOnce<
  { keyHash: string },
  Pick<
    ApiKeysTable,
    "id" | "name" | "scopes" | "expires_at" | "revoked_at" | "last_used_at" | "products"
  >
>(["keyHash"], (db, p) =>
  db
    .selectFrom("api_keys")
    .select(["id", "name", "scopes", "expires_at", "revoked_at", "last_used_at", "products"])
    .where("key_hash", "=", p.keyHash),
);
