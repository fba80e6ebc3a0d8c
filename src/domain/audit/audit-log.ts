import { type Kysely, sql, type Transaction } from "kysely";
import { inTransaction } from "../../db/transaction.js";
import type { AuditActorType, DB } from "../../db/schema.js";
import { newId } from "../../lib/ids.js";
import { toIso } from "../../lib/time.js";
import { type IdempotencyClaim, markIdempotencyApplied } from "../idempotency/idempotency-keys.js";
import { decodeCursor, encodeCursor, type Page } from "../pagination.js";
import type { AuditEntry as AuditEntryAnswer } from "../../contracts/audit.js";

/** Who did something: an API key, a signed-in admin, or the CLI on the server. */
export interface Actor {
  type: AuditActorType;
  id: string | null;
  label: string;
  ip: string | null;
  /**
   * An API key's products (ids) when it is limited to some; absent or null: every product.
   * Not recorded: it says what the actor may reach, not who it is.
   */
  productIds?: readonly string[] | null;
}

export type AuditEntry = AuditEntryAnswer;

/** Records one write. `details` must never hold a secret (API key secrets, passwords). */
export async function recordAudit(
  db: Kysely<DB>,
  actor: Actor,
  action: string,
  target: { type: string; id: string },
  details: Record<string, unknown> = {},
  now = Date.now(),
): Promise<void> {
  await db
    .insertInto("audit_log")
    .values({
      id: newId("aud"),
      at: now,
      actor_type: actor.type,
      actor_id: actor.id,
      actor_label: actor.label,
      action,
      target_type: target.type,
      target_id: target.id,
      ip: actor.ip,
      details: JSON.stringify(details),
    })
    .execute();
}

/**
 * Performs a write and records it in the audit log in the same transaction: both commit, or
 * neither. `describe` names the target and details from the write's result. Given the admin API
 * request's Idempotency-Key claim, it marks the claim applied in that transaction too, so a
 * write that committed is never run again under its key.
 */
export function withAudit<T>(
  db: Kysely<DB>,
  actor: Actor,
  action: string,
  write: (trx: Transaction<DB>) => Promise<T>,
  describe: (result: T) => {
    target: { type: string; id: string };
    details?: Record<string, unknown>;
  },
  idempotency: IdempotencyClaim | null = null,
): Promise<T> {
  return inTransaction(db, async (trx) => {
    const result = await write(trx);
    const { target, details } = describe(result);
    const now = Date.now();
    await recordAudit(trx, actor, action, target, details, now);
    if (idempotency) await markIdempotencyApplied(trx, idempotency, now);
    return result;
  });
}

/**
 * Who last did `action` to each of the targets (by target id), and when: the releases page's
 * "Published by". A target never acted on is absent.
 */
export async function lastActors(
  db: Kysely<DB>,
  action: string,
  target: { type: string; ids: readonly string[] },
): Promise<Map<string, { actor: AuditEntry["actor"]; at: string }>> {
  const result = new Map<string, { actor: AuditEntry["actor"]; at: string }>();
  if (target.ids.length === 0) return result;
  const rows = await db
    .selectFrom("audit_log")
    .select(["target_id", "actor_type", "actor_id", "actor_label", "at"])
    .where("target_type", "=", target.type)
    .where("target_id", "in", [...target.ids])
    .where("action", "=", action)
    .orderBy("at")
    .orderBy("id")
    .execute();
  // Oldest first, so the latest entry of each target is the one kept.
  for (const row of rows) {
    result.set(row.target_id, {
      actor: { type: row.actor_type, id: row.actor_id, label: row.actor_label },
      at: toIso(row.at),
    });
  }
  return result;
}

/** What an audit list may be narrowed to; every filter given must hold. */
export interface AuditFilter {
  /** The actor's label (an admin's email, an API key's name) or id, exactly. */
  actor?: string;
  /** An action (`license.update`), or a family of them (`license`: every `license.*`). */
  action?: string;
  /** A target's id, or a license's key (its entries name the license by id). */
  target?: string;
  /** Epoch ms: entries at or after. */
  from?: number;
  /** Epoch ms: entries before. */
  to?: number;
}

/**
 * Newest first, cursor-paginated. Given `productIds` (a limited API key's), only the entries
 * about those products: the products themselves, their releases and their licenses.
 */
export async function listAudit(
  db: Kysely<DB>,
  options: AuditFilter & { limit: number; cursor?: string; productIds?: readonly string[] | null },
): Promise<Page<AuditEntry>> {
  let query = filteredAudit(db, options)
    .selectAll()
    .orderBy("at", "desc")
    .orderBy("id", "desc")
    .limit(options.limit + 1);
  if (options.cursor !== undefined) {
    const { at, id } = decodeCursor(options.cursor);
    query = query.where((eb) =>
      eb.or([eb("at", "<", at), eb.and([eb("at", "=", at), eb("id", "<", id)])]),
    );
  }
  const { productIds } = options;
  if (productIds !== undefined && productIds !== null) {
    // "" matches no id or slug and keeps each IN list non-empty.
    const ids = [...productIds, ""];
    const slugs = (
      await db.selectFrom("products").select("slug").where("id", "in", ids).execute()
    ).map((row) => row.slug);
    query = query.where((eb) =>
      eb.or([
        eb.and([eb("target_type", "=", "product"), eb("target_id", "in", [...slugs, ""])]),
        // A release is "<slug>@<version>"; slugs hold no LIKE wildcard.
        ...slugs.map((slug) =>
          eb.and([eb("target_type", "=", "release"), eb("target_id", "like", `${slug}@%`)]),
        ),
        eb.and([
          eb("target_type", "=", "license"),
          eb(
            "target_id",
            "in",
            eb.selectFrom("licenses").select("id").where("product_id", "in", ids),
          ),
        ]),
      ]),
    );
  }
  const rows = await query.execute();
  const items = rows.slice(0, options.limit).map((row): AuditEntry => ({
    id: row.id,
    at: toIso(row.at),
    actor: { type: row.actor_type, id: row.actor_id, label: row.actor_label },
    action: row.action,
    target: { type: row.target_type, id: row.target_id },
    ip: row.ip,
    details: JSON.parse(row.details) as Record<string, unknown>,
  }));
  const last = rows[options.limit - 1];
  return {
    items,
    nextCursor: rows.length > options.limit && last ? encodeCursor(last.at, last.id) : null,
  };
}

/** The audit log narrowed to a filter's actor, action, target and time range. */
function filteredAudit(db: Kysely<DB>, filter: AuditFilter) {
  let query = db.selectFrom("audit_log");
  const { actor, action, target } = filter;
  if (actor !== undefined && actor !== "") {
    query = query.where((eb) => eb.or([eb("actor_label", "=", actor), eb("actor_id", "=", actor)]));
  }
  if (action !== undefined && action !== "") {
    const family = `${action.replace(/[\\%_]/g, (c) => `\\${c}`)}.%`;
    query = action.includes(".")
      ? query.where("action", "=", action)
      : query.where("action", "like", sql<string>`${family} escape '\\'`);
  }
  if (target !== undefined && target !== "") {
    query = query.where((eb) =>
      eb.or([
        eb("target_id", "=", target),
        eb.and([
          eb("target_type", "=", "license"),
          eb(
            "target_id",
            "in",
            eb.selectFrom("licenses").select("id").where("license_key", "=", target),
          ),
        ]),
      ]),
    );
  }
  if (filter.from !== undefined) query = query.where("at", ">=", filter.from);
  if (filter.to !== undefined) query = query.where("at", "<", filter.to);
  return query;
}
