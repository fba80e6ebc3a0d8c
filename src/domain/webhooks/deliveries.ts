import type { Kysely, Selectable } from "kysely";
import { type ClaimedDelivery, claimDueDeliveries } from "../../db/webhook-claim.js";
import type { DB, WebhookDeliveriesTable } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { newId } from "../../lib/ids.js";
import { isoOrNull, toIso } from "../../lib/time.js";
import { type Actor, withAudit } from "../audit/audit-log.js";
import { decodeCursor, encodeCursor, type Page } from "../pagination.js";
import type { MasterKey } from "../signing/key-material.js";
import { endpointNotFound, requireEndpointRow, signingSecrets } from "./endpoints.js";
import { eventPayload } from "./events.js";
import { withoutLicenseData } from "./license-data.js";
import { webhookSignature } from "./secrets.js";
import { type SendPolicy, sendWebhook } from "./send.js";
import type { WebhookDelivery, WebhookDeliveryDetail } from "../../contracts/webhooks.js";
import { type WebhookDeliveryStatus, webhookTestEvent } from "../../contracts/vocabulary.js";

/**
 * The waits before each retry, after the first attempt fails: most failures are brief, so the
 * first two come within a minute; the last ends about 28 hours after the event. Each wait is
 * stretched or shortened by up to 10 % at random (jitter), so retries after an outage spread.
 */
export const retryDelaysMs = [
  5_000,
  30_000,
  2 * 60_000,
  10 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000,
] as const;

/** The wait after `attempts` failed attempts, or null when the delivery has failed for good. */
export function retryDelay(attempts: number, random: () => number): number | null {
  const base = retryDelaysMs[attempts - 1];
  if (base === undefined) return null;
  return Math.round(base * (0.9 + 0.2 * random()));
}

/** Where the worker writes what a key holder does not see: why an attempt had no answer. */
export interface DeliveryLog {
  warn(details: Record<string, unknown>, message: string): void;
}

/** How the delivery worker runs (app.ts: WebhookOptions). */
export interface DeliveryDeps extends SendPolicy {
  masterKey: MasterKey;
  now: () => number;
  random: () => number;
  /** Disable an endpoint after this many failed attempts in a row, spanning disableAfterMs. */
  disableAfterFailures: number;
  disableAfterMs: number;
  log: DeliveryLog;
}

/** The endpoint is disabled only when it has failed this long too (the retries' own horizon). */
export const defaultDisableAfterMs = 24 * 3_600_000;

/**
 * Attempts in flight to one endpoint at most, all processes together: a receiver that is slow
 * or never answers holds up to this many of its own deliveries, and no other endpoint's.
 */
export const attemptsPerEndpoint = 4;

/** An attempt holds its delivery this long: beyond the timeout, a process has died. */
const leaseMarginMs = 60_000;

/**
 * Takes up to `limit` due deliveries for this process, oldest first, each endpoint's up to its
 * share of attempts in flight; each is then attempted with `attemptDelivery`.
 */
export function claimDueWebhooks(
  db: Kysely<DB>,
  deps: DeliveryDeps,
  limit: number,
): Promise<ClaimedDelivery[]> {
  return claimDueDeliveries(db, {
    now: deps.now(),
    leaseMs: deps.timeoutMs + leaseMarginMs,
    limit,
    perEndpoint: attemptsPerEndpoint,
  });
}

/**
 * One attempt of a claimed delivery: the signed POST, then its outcome, the next attempt's time
 * or the final status, and the endpoint's failure count (which may disable it). No transaction
 * is open while the request is in flight.
 */
export async function attemptDelivery(
  db: Kysely<DB>,
  deps: DeliveryDeps,
  delivery: ClaimedDelivery,
): Promise<void> {
  const endpoint = await db
    .selectFrom("webhook_endpoints")
    .selectAll()
    .where("id", "=", delivery.endpoint_id)
    .executeTakeFirst();
  if (!endpoint) return;
  const now = deps.now();
  const timestamp = Math.floor(now / 1000);
  // A URL set by a caller without licenses:read gets no license data, whatever the event's age.
  const body =
    endpoint.withholds_license_data === 1
      ? JSON.stringify(withoutLicenseData(JSON.parse(delivery.payload)))
      : delivery.payload;
  const headers = {
    "content-type": "application/json",
    "user-agent": "Shipkey-Webhooks",
    "webhook-id": delivery.event_id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": webhookSignature(
      signingSecrets(deps.masterKey, endpoint, now),
      delivery.event_id,
      timestamp,
      body,
    ),
  };
  const outcome = await sendWebhook(endpoint.url, headers, body, deps);
  const finished = deps.now();
  const attempts = delivery.attempts + 1;
  if (outcome.detail !== null) {
    deps.log.warn(
      {
        endpointId: endpoint.id,
        eventId: delivery.event_id,
        attempt: attempts,
        why: outcome.detail,
      },
      "webhook delivery failed without an answer",
    );
  }
  const delay = outcome.ok ? null : retryDelay(attempts, deps.random);
  const status: WebhookDeliveryStatus = outcome.ok
    ? "delivered"
    : delay === null
      ? "failed"
      : "pending";
  // Only while this process still holds it: after its lease, another process owns the delivery.
  await db
    .updateTable("webhook_deliveries")
    .set({
      status,
      attempts,
      next_attempt_at: delay === null ? null : finished + delay,
      claimed_until: null,
      last_attempt_at: now,
      response_status: outcome.status,
      last_error: outcome.error,
      duration_ms: outcome.durationMs,
    })
    .where("event_id", "=", delivery.event_id)
    .where("endpoint_id", "=", delivery.endpoint_id)
    .where("claimed_until", "=", delivery.claimed_until)
    .execute();
  if (outcome.ok) {
    await db
      .updateTable("webhook_endpoints")
      .set({ consecutive_failures: 0, failing_since: null })
      .where("id", "=", endpoint.id)
      .where("consecutive_failures", ">", 0)
      .execute();
    return;
  }
  const failing = await db
    .updateTable("webhook_endpoints")
    .set((eb) => ({
      consecutive_failures: eb("consecutive_failures", "+", 1),
      failing_since: eb.fn.coalesce("failing_since", eb.val(finished)),
    }))
    .where("id", "=", endpoint.id)
    .returning(["consecutive_failures", "failing_since", "enabled"])
    .executeTakeFirst();
  if (
    failing &&
    failing.enabled === 1 &&
    failing.consecutive_failures >= deps.disableAfterFailures &&
    finished - Number(failing.failing_since ?? finished) >= deps.disableAfterMs
  ) {
    await disableFailingEndpoint(db, endpoint.id, failing.consecutive_failures, finished);
  }
}

const serviceActor: Actor = { type: "service", id: null, label: "webhook delivery", ip: null };

/** The service disables an endpoint that keeps failing, with an audit entry saying why. */
async function disableFailingEndpoint(
  db: Kysely<DB>,
  id: string,
  failures: number,
  now: number,
): Promise<void> {
  const reason = `${failures} consecutive failed attempts`;
  await withAudit(
    db,
    serviceActor,
    "webhook_endpoint.disable",
    async (trx) =>
      (
        await trx
          .updateTable("webhook_endpoints")
          .set({ enabled: 0, disabled_reason: reason, updated_at: now })
          .where("id", "=", id)
          .where("enabled", "=", 1)
          .executeTakeFirst()
      ).numUpdatedRows,
    () => ({ target: { type: "webhook_endpoint", id }, details: { reason } }),
  );
}

type DeliveryRow = Selectable<WebhookDeliveriesTable>;

function toDeliveryView(row: DeliveryRow): WebhookDelivery {
  return {
    eventId: row.event_id,
    endpointId: row.endpoint_id,
    eventType: row.event_type,
    status: row.status,
    attempts: row.attempts,
    createdAt: toIso(row.created_at),
    lastAttemptAt: isoOrNull(row.last_attempt_at),
    nextAttemptAt: row.status === "pending" ? isoOrNull(row.next_attempt_at) : null,
    responseStatus: row.response_status,
    durationMs: row.duration_ms,
    lastError: row.last_error,
  };
}

/** An endpoint's deliveries, newest first, cursor-paginated; optionally of one status. */
export async function listWebhookDeliveries(
  db: Kysely<DB>,
  endpointId: string,
  options: { limit: number; cursor?: string; status?: WebhookDeliveryStatus },
): Promise<Page<WebhookDelivery>> {
  await requireEndpointRow(db, endpointId);
  let query = db
    .selectFrom("webhook_deliveries")
    .selectAll()
    .where("endpoint_id", "=", endpointId)
    .orderBy("created_at", "desc")
    .orderBy("event_id", "desc")
    .limit(options.limit + 1);
  if (options.status !== undefined) query = query.where("status", "=", options.status);
  if (options.cursor !== undefined) {
    const { at, id } = decodeCursor(options.cursor);
    query = query.where((eb) =>
      eb.or([
        eb("created_at", "<", at),
        eb.and([eb("created_at", "=", at), eb("event_id", "<", id)]),
      ]),
    );
  }
  const rows = await query.execute();
  const last = rows[options.limit - 1];
  return {
    items: rows.slice(0, options.limit).map(toDeliveryView),
    nextCursor:
      rows.length > options.limit && last ? encodeCursor(last.created_at, last.event_id) : null,
  };
}

async function requireDelivery(
  db: Kysely<DB>,
  endpointId: string,
  eventId: string,
): Promise<DeliveryRow> {
  const row = await db
    .selectFrom("webhook_deliveries")
    .selectAll()
    .where("endpoint_id", "=", endpointId)
    .where("event_id", "=", eventId)
    .executeTakeFirst();
  if (row) return row;
  await requireEndpointRow(db, endpointId);
  throw new ShipkeyError(
    "WEBHOOK_DELIVERY_NOT_FOUND",
    `Delivery ${eventId} of webhook endpoint ${endpointId} not found`,
  );
}

/** What the caller reads beside webhooks:write: licenses:read guards license keys and customers. */
export interface DeliveryAccess {
  licensesRead: boolean;
}

/**
 * One delivery with its payload; without licenses:read, the payload with its license keys masked
 * and its customers' names and e-mails left out (withoutLicenseData).
 */
export async function getWebhookDelivery(
  db: Kysely<DB>,
  endpointId: string,
  eventId: string,
  access: DeliveryAccess,
): Promise<WebhookDeliveryDetail> {
  const row = await requireDelivery(db, endpointId, eventId);
  const payload = JSON.parse(row.payload) as Record<string, unknown>;
  return {
    ...toDeliveryView(row),
    payload: access.licensesRead ? payload : (withoutLicenseData(payload) as typeof payload),
    licenseDataWithheld: !access.licensesRead,
  };
}

/**
 * Sends a delivery again, same webhook-id and payload, with a fresh retry schedule. An event from
 * before the endpoint's URL last changed was meant for the receiver it had then: sending it to
 * the new one needs licenses:read (else whoever re-points an endpoint could have past events'
 * license keys and customers sent to a receiver of their choosing). An attempt in flight keeps
 * its claim (the delivery is never sent twice at once), and its outcome decides.
 */
export async function redeliverWebhook(
  db: Kysely<DB>,
  endpointId: string,
  eventId: string,
  access: DeliveryAccess,
  now = Date.now(),
): Promise<WebhookDelivery> {
  const delivery = await requireDelivery(db, endpointId, eventId);
  if (!access.licensesRead) {
    const { url_changed_at: urlChangedAt } = await requireEndpointRow(db, endpointId);
    if (urlChangedAt !== null && delivery.created_at < urlChangedAt) {
      throw new ShipkeyError(
        "REDELIVERY_SCOPE_NOT_HELD",
        `Event ${eventId} was created before the URL of webhook endpoint ${endpointId} last ` +
          "changed: redelivering it to the new URL needs the licenses:read scope too",
      );
    }
  }
  await db
    .updateTable("webhook_deliveries")
    .set({ status: "pending", attempts: 0, next_attempt_at: now })
    .where("endpoint_id", "=", endpointId)
    .where("event_id", "=", eventId)
    .execute();
  return toDeliveryView(await requireDelivery(db, endpointId, eventId));
}

/** Queues a webhook.test event for this endpoint only (even a disabled one). */
export async function sendWebhookTest(
  db: Kysely<DB>,
  endpointId: string,
  now = Date.now(),
): Promise<WebhookDelivery> {
  const endpoint = await db
    .selectFrom("webhook_endpoints")
    .select("id")
    .where("id", "=", endpointId)
    .executeTakeFirst();
  if (!endpoint) throw endpointNotFound(endpointId);
  const row: DeliveryRow = {
    event_id: newId("msg", now),
    endpoint_id: endpointId,
    event_type: webhookTestEvent,
    payload: eventPayload(
      webhookTestEvent,
      { endpointId, message: "A test event sent from Shipkey" },
      now,
    ),
    status: "pending",
    attempts: 0,
    next_attempt_at: now,
    claimed_until: null,
    last_attempt_at: null,
    response_status: null,
    last_error: null,
    duration_ms: null,
    created_at: now,
  };
  await db.insertInto("webhook_deliveries").values(row).execute();
  return toDeliveryView(row);
}
