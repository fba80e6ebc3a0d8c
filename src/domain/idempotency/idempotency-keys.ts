import type { ExpressionBuilder, Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";

/**
 * Idempotency-Key for admin writes (draft-ietf-httpapi-idempotency-key-header). A key is claimed
 * by inserting its row, guarded by the primary key (caller, key): of concurrent requests with one
 * key exactly one inserts, on either dialect and across processes. The winner runs; its answer
 * is stored on success, or its claim deleted on failure so a retry can run.
 */

/** How long an answer is replayed, and how long its row is kept. */
export const idempotencyWindowMs = 24 * 60 * 60_000;

/**
 * A claim still unanswered after this long belongs to a request whose process died: it is taken
 * over, unless its write had committed (applied_at, set in the write's transaction with its audit
 * entry: markIdempotencyApplied), which is never run twice. Admin writes are single short
 * transactions, far shorter than this.
 */
export const abandonedClaimMs = 5 * 60_000;

export interface IdempotencyClaim {
  caller: string;
  key: string;
  fingerprint: string;
  claimedAt: number;
}

export interface StoredAnswer {
  statusCode: number;
  headers: Record<string, string>;
  /** null: the answer held a secret and was not kept. */
  body: string | null;
}

/**
 * Claims `key` for `caller`, or returns the answer stored for the same request. Throws
 * IDEMPOTENCY_KEY_REUSED for another request under the key, IDEMPOTENCY_KEY_IN_USE while the
 * first request runs, IDEMPOTENCY_REPLAY_WITHHELD when its answer held a secret.
 */
export async function claimIdempotencyKey(
  db: Kysely<DB>,
  request: { caller: string; key: string; fingerprint: string },
  now = Date.now(),
): Promise<{ claim: IdempotencyClaim } | { replay: StoredAnswer }> {
  const { caller, key, fingerprint } = request;
  // Two rounds: an outdated row is deleted once, then the claim is tried again.
  for (let round = 0; round < 2; round++) {
    const inserted = await db
      .insertInto("idempotency_keys")
      .values({ caller, key, fingerprint, created_at: now })
      .onConflict((oc) => oc.columns(["caller", "key"]).doNothing())
      .returning("key")
      .executeTakeFirst();
    if (inserted) return { claim: { caller, key, fingerprint, claimedAt: now } };
    const row = await db
      .selectFrom("idempotency_keys")
      .selectAll()
      .where("caller", "=", caller)
      .where("key", "=", key)
      .executeTakeFirst();
    if (!row) continue; // released or pruned meanwhile
    if (isOutdated(row, now)) {
      await db
        .deleteFrom("idempotency_keys")
        .where("caller", "=", caller)
        .where("key", "=", key)
        .where("created_at", "=", row.created_at)
        .execute();
      continue;
    }
    return { replay: answerOf(row, fingerprint, now) };
  }
  throw inUse();
}

function isOutdated(row: DB["idempotency_keys"], now: number): boolean {
  const age = now - Number(row.created_at);
  const abandoned = row.status_code === null && row.applied_at === null && age >= abandonedClaimMs;
  return age >= idempotencyWindowMs || abandoned;
}

function answerOf(row: DB["idempotency_keys"], fingerprint: string, now: number): StoredAnswer {
  if (row.fingerprint !== fingerprint) {
    throw new ShipkeyError(
      "IDEMPOTENCY_KEY_REUSED",
      "This Idempotency-Key was used for a different request",
    );
  }
  if (row.status_code === null) {
    if (row.applied_at === null || now - Number(row.created_at) < abandonedClaimMs) throw inUse();
    throw new ShipkeyError(
      "IDEMPOTENCY_REPLAY_WITHHELD",
      "The request with this Idempotency-Key was applied, but the server stopped before storing its answer; it is not run again",
    );
  }
  if (row.response_body === null) {
    throw new ShipkeyError(
      "IDEMPOTENCY_REPLAY_WITHHELD",
      "The request with this Idempotency-Key succeeded; its answer held a secret shown only once and is not replayed",
    );
  }
  return {
    statusCode: row.status_code,
    headers: JSON.parse(row.response_headers ?? "{}") as Record<string, string>,
    body: row.response_body,
  };
}

const inUse = () =>
  new ShipkeyError(
    "IDEMPOTENCY_KEY_IN_USE",
    "A request with this Idempotency-Key is still running; retry later",
  );

/** Stores the claimed request's answer for replay. */
export async function completeIdempotencyKey(
  db: Kysely<DB>,
  claim: IdempotencyClaim,
  answer: StoredAnswer,
): Promise<void> {
  await db
    .updateTable("idempotency_keys")
    .set({
      status_code: answer.statusCode,
      response_headers: JSON.stringify(answer.headers),
      response_body: answer.body,
    })
    .where((eb) => claimed(eb, claim))
    .execute();
}

/**
 * Records that the claimed request's write committed: withAudit calls it beside the audit
 * entry, in the write's transaction. From then on the request is never run again under this key,
 * even if its answer is never stored.
 */
export async function markIdempotencyApplied(
  db: Kysely<DB>,
  claim: IdempotencyClaim,
  now = Date.now(),
): Promise<void> {
  await db
    .updateTable("idempotency_keys")
    .set({ applied_at: now })
    .where((eb) => claimed(eb, claim))
    .execute();
}

/**
 * Gives the key up after a failed request, so that a retry runs it again; a request whose write
 * had committed keeps its claim (a retry is told it was applied).
 */
export async function releaseIdempotencyKey(
  db: Kysely<DB>,
  claim: IdempotencyClaim,
): Promise<void> {
  await db
    .deleteFrom("idempotency_keys")
    .where((eb) => claimed(eb, claim))
    .where("applied_at", "is", null)
    .execute();
}

/** This claim's row, unanswered: never one that another request took over since. */
const claimed = (eb: ExpressionBuilder<DB, "idempotency_keys">, claim: IdempotencyClaim) =>
  eb.and([
    eb("caller", "=", claim.caller),
    eb("key", "=", claim.key),
    eb("created_at", "=", claim.claimedAt),
    eb("status_code", "is", null),
  ]);
