import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { toIso } from "../../lib/time.js";
import type { Actor } from "../audit/audit-log.js";
import { parseScopes } from "./api-keys.js";

/**
 * What an API key may hand on or take away on the admin API: its own scopes, until its own
 * expiry. A signed-in admin and the CLI are unrestricted, so they have no KeyAuthority.
 */
export interface KeyAuthority {
  scopes: string[];
  /** Epoch ms, or null for a key that never expires. */
  expiresAt: number | null;
}

/** The authority an actor acts with: null (unrestricted) for an admin or the CLI. */
export async function keyAuthorityOf(db: Kysely<DB>, actor: Actor): Promise<KeyAuthority | null> {
  if (actor.type !== "api_key") return null;
  const key =
    actor.id === null
      ? undefined
      : await db
          .selectFrom("api_keys")
          .select(["scopes", "expires_at"])
          .where("id", "=", actor.id)
          .where("revoked_at", "is", null)
          .executeTakeFirst();
  // A key that cannot be found holds nothing.
  return key
    ? { scopes: parseScopes(key.scopes), expiresAt: key.expires_at }
    : { scopes: [], expiresAt: 0 };
}

/** A key creates only keys with a subset of its scopes, expiring no later than itself. */
export function assertMayCreateKey(
  holder: KeyAuthority,
  wanted: { scopes: string[]; expiresAt?: number | null },
): void {
  const missing = scopesNotHeld(holder, wanted.scopes);
  if (missing.length > 0) {
    throw new ShipkeyError(
      "SCOPE_NOT_HELD",
      `This API key cannot grant scopes it does not hold: ${missing.join(", ")}`,
    );
  }
  const expiresAt = wanted.expiresAt ?? null;
  if (holder.expiresAt !== null && (expiresAt === null || expiresAt > holder.expiresAt)) {
    throw new ShipkeyError(
      "SCOPE_NOT_HELD",
      `This API key expires at ${toIso(holder.expiresAt)}; a key it creates needs an expiresAt no later than that`,
    );
  }
}

/** A key revokes only keys whose scopes it holds all of. */
export function assertMayRevokeKey(holder: KeyAuthority, target: { scopes: string[] }): void {
  const missing = scopesNotHeld(holder, target.scopes);
  if (missing.length > 0) {
    throw new ShipkeyError(
      "SCOPE_NOT_HELD",
      `This API key cannot revoke a key with scopes it does not hold: ${missing.join(", ")}`,
    );
  }
}

function scopesNotHeld(holder: KeyAuthority, scopes: string[]): string[] {
  return [...new Set(scopes)].filter((scope) => !holder.scopes.includes(scope));
}
