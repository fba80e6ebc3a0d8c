import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { idempotencyWindowMs } from "../idempotency/idempotency-keys.js";
import { deactivationWindowMs } from "../licenses/deactivate-machine.js";

/** Rows deleted per statement: each delete is short, and other writes run between them. */
export const pruneBatchSize = 1000;

export interface PruneOptions {
  now?: number;
  /** How long an ended activation is kept after its deactivation (0: not at all). */
  activationHistoryMs: number;
  /** How long a finished (delivered or failed) webhook delivery and its payload are kept. */
  webhookRetentionMs?: number;
  /** How long a payment provider's event keeps its raw body (the event's row stays). */
  integrationEventBodyMs?: number;
  /** How long a sent or failed e-mail message is kept. */
  emailRetentionMs?: number;
}

/** INTEGRATION_EVENT_BODY_DAYS' default. */
export const defaultIntegrationEventBodyDays = 30;

/** EMAIL_RETENTION_DAYS' default. */
export const defaultEmailRetentionDays = 90;

/** WEBHOOKS_RETENTION_DAYS' default. */
export const defaultWebhookRetentionDays = 30;

export interface PruneCounts {
  activations: number;
  sessions: number;
  idempotencyKeys: number;
  certificates: number;
  webhookDeliveries: number;
  integrationEventBodies: number;
  emailMessages: number;
}

/**
 * Deletes what no one needs any more: ended activations past their retention, expired dashboard
 * sessions, Idempotency-Key rows past their 24 h window, the records of expired license
 * certificates and finished webhook deliveries (with their payloads) past their retention, and
 * the raw bodies of payment providers' events past theirs, and sent or failed e-mail messages
 * past their retention. Active activations are never touched: they hold slots. A client's deactivation
 * on a license with a churn limit (its own or its product's) is kept at least 30 days, whatever
 * the retention: the limit counts it that long.
 */
export async function prune(db: Kysely<DB>, options: PruneOptions): Promise<PruneCounts> {
  const now = options.now ?? Date.now();
  const activationCutoff = now - options.activationHistoryMs;
  const activations = await inBatches((limit) =>
    db
      .deleteFrom("activations")
      .where("id", "in", (eb) =>
        eb
          .selectFrom("activations")
          .select("id")
          .where("deactivated_at", "is not", null)
          .where("deactivated_at", "<=", activationCutoff)
          // A client's deactivation on a license with a churn limit stays while the limit
          // counts it.
          .where((eb) =>
            eb.or([
              eb("deactivated_by", "is", null),
              eb("deactivated_by", "!=", "client"),
              eb("deactivated_at", "<=", now - deactivationWindowMs),
              eb(
                "license_id",
                "not in",
                eb
                  .selectFrom("licenses")
                  .innerJoin("products", "products.id", "licenses.product_id")
                  .select("licenses.id")
                  .where((inner) =>
                    inner.or([
                      inner("licenses.max_deactivations_per_30_days", "is not", null),
                      inner("products.max_deactivations_per_30_days", "is not", null),
                    ]),
                  ),
              ),
            ]),
          )
          .limit(limit),
      )
      .executeTakeFirst(),
  );
  const sessions = await inBatches((limit) =>
    db
      .deleteFrom("admin_sessions")
      .where("id_hash", "in", (eb) =>
        eb
          .selectFrom("admin_sessions")
          .select("id_hash")
          .where("expires_at", "<=", now)
          .limit(limit),
      )
      .executeTakeFirst(),
  );
  const idempotencyKeys = await inBatches((limit) =>
    db
      .deleteFrom("idempotency_keys")
      .where((eb) =>
        eb(
          eb.refTuple("caller", "key"),
          "in",
          eb
            .selectFrom("idempotency_keys")
            .select(["caller", "key"])
            .where("created_at", "<=", now - idempotencyWindowMs)
            .limit(limit)
            .$asTuple("caller", "key"),
        ),
      )
      .executeTakeFirst(),
  );
  // A certificate counts towards the offline limit until its exp; after it, its record is done.
  const certificates = await inBatches((limit) =>
    db
      .deleteFrom("license_certificates")
      .where((eb) =>
        eb(
          eb.refTuple("license_id", "machine_id"),
          "in",
          eb
            .selectFrom("license_certificates")
            .select(["license_id", "machine_id"])
            .where("expires_at", "<=", now)
            .limit(limit)
            .$asTuple("license_id", "machine_id"),
        ),
      )
      .executeTakeFirst(),
  );
  // Pending deliveries are never pruned: they are still owed.
  const webhookCutoff =
    now - (options.webhookRetentionMs ?? defaultWebhookRetentionDays * 86_400_000);
  const webhookDeliveries = await inBatches((limit) =>
    db
      .deleteFrom("webhook_deliveries")
      .where((eb) =>
        eb(
          eb.refTuple("event_id", "endpoint_id"),
          "in",
          eb
            .selectFrom("webhook_deliveries")
            .select(["event_id", "endpoint_id"])
            .where("created_at", "<=", webhookCutoff)
            .where("status", "!=", "pending")
            .limit(limit)
            .$asTuple("event_id", "endpoint_id"),
        ),
      )
      .executeTakeFirst(),
  );
  // The event's row stays (the ledger: a copy delivered later is still a duplicate); its raw
  // body, which holds the customer's name and e-mail, goes.
  const bodyCutoff =
    now - (options.integrationEventBodyMs ?? defaultIntegrationEventBodyDays * 86_400_000);
  const integrationEventBodies = await inBatches(async (limit) => {
    const result = await db
      .updateTable("integration_events")
      .set({ body: null })
      .where("id", "in", (eb) =>
        eb
          .selectFrom("integration_events")
          .select("id")
          .where("received_at", "<=", bodyCutoff)
          .where("body", "is not", null)
          .limit(limit),
      )
      .executeTakeFirst();
    return { numDeletedRows: result.numUpdatedRows };
  });
  // Pending and sending messages are never pruned: they are still owed.
  const emailCutoff = now - (options.emailRetentionMs ?? defaultEmailRetentionDays * 86_400_000);
  const emailMessages = await inBatches((limit) =>
    db
      .deleteFrom("email_messages")
      .where("id", "in", (eb) =>
        eb
          .selectFrom("email_messages")
          .select("id")
          .where("created_at", "<=", emailCutoff)
          .where("state", "in", ["sent", "failed"])
          .limit(limit),
      )
      .executeTakeFirst(),
  );
  return {
    activations,
    sessions,
    idempotencyKeys,
    certificates,
    webhookDeliveries,
    integrationEventBodies,
    emailMessages,
  };
}

/** Runs a bounded delete until one deletes less than a full batch; the rows deleted. */
async function inBatches(
  deleteBatch: (limit: number) => Promise<{ numDeletedRows: bigint }>,
): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = Number((await deleteBatch(pruneBatchSize)).numDeletedRows);
    total += deleted;
    if (deleted < pruneBatchSize) return total;
  }
}
