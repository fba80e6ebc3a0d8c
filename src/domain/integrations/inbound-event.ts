import { createHash } from "node:crypto";
import { ShipkeyError } from "../../errors.js";
import { parseIsoTimestamp } from "../../lib/time.js";
import type { IntegrationProvider } from "../../contracts/vocabulary.js";

/** A verified event as the ledger records it, whichever provider sent it. */
export interface InboundEvent {
  /** What makes it unique: the provider's event id (Lemon Squeezy: a digest, see below). */
  key: string;
  type: string;
  /** The provider's object it is about (cs_…, txn_…, an order's id). */
  objectId: string | null;
  /** Live or test mode as the event says; null when it does not (Paddle: one secret per environment). */
  livemode: boolean | null;
  /** Epoch ms: when the provider says it happened. */
  occurredAt: number | null;
  /** The event's object: Stripe's data.object, Paddle's data, Lemon Squeezy's data. */
  object: Record<string, unknown>;
  /** The whole parsed body. */
  body: Record<string, unknown>;
}

/** The body of a verified event, read as its provider shapes it; 400 for one that is not. */
export function readInboundEvent(
  provider: IntegrationProvider,
  raw: Buffer | string,
): InboundEvent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof raw === "string" ? raw : raw.toString("utf8"));
  } catch {
    throw new ShipkeyError("INVALID_JSON", "The event's body is not JSON");
  }
  const body = record(parsed);
  if (body === null) throw malformed(provider, "not a JSON object");
  if (provider === "stripe") return stripeEvent(body);
  if (provider === "paddle") return paddleEvent(body);
  return lemonSqueezyEvent(body);
}

function stripeEvent(body: Record<string, unknown>): InboundEvent {
  const id = text(body.id);
  const type = text(body.type);
  const object = record(record(body.data)?.object);
  if (id === null || type === null || object === null) {
    throw malformed("stripe", "id, type and data.object are required");
  }
  const created = body.created;
  return {
    key: id,
    type,
    objectId: text(object.id),
    livemode: typeof body.livemode === "boolean" ? body.livemode : null,
    occurredAt: typeof created === "number" ? created * 1000 : null,
    object,
    body,
  };
}

function paddleEvent(body: Record<string, unknown>): InboundEvent {
  const id = text(body.event_id);
  const type = text(body.event_type);
  const object = record(body.data);
  if (id === null || type === null || object === null) {
    throw malformed("paddle", "event_id, event_type and data are required");
  }
  const occurred = text(body.occurred_at);
  return {
    key: id,
    type,
    objectId: text(object.id),
    livemode: null,
    occurredAt: occurred === null ? null : parseIsoTimestamp(occurred),
    object,
    body,
  };
}

/**
 * Lemon Squeezy sends no event id: the key is the SHA-256 of the event name, the object's type
 * and id and its updated_at, so a copy of one delivery has the same key and a later change of
 * the same object another.
 */
function lemonSqueezyEvent(body: Record<string, unknown>): InboundEvent {
  const meta = record(body.meta);
  const object = record(body.data);
  const type = text(meta?.event_name);
  const id = object === null ? null : (text(object.id) ?? numberText(object.id));
  if (meta === null || object === null || type === null || id === null) {
    throw malformed("lemonsqueezy", "meta.event_name and data.id are required");
  }
  const attributes = record(object.attributes) ?? {};
  const updatedAt = text(attributes.updated_at) ?? "";
  const digest = createHash("sha256")
    .update([type, text(object.type) ?? "", id, updatedAt].join("\n"))
    .digest("hex");
  return {
    key: `ls_${digest}`,
    type,
    objectId: id,
    livemode: typeof meta.test_mode === "boolean" ? !meta.test_mode : null,
    occurredAt: updatedAt === "" ? null : parseIsoTimestamp(updatedAt),
    object,
    body,
  };
}

export const record = (value: unknown): Record<string, unknown> | null =>
  typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;

export const text = (value: unknown): string | null =>
  typeof value === "string" && value !== "" ? value : null;

const numberText = (value: unknown): string | null =>
  typeof value === "number" && Number.isFinite(value) ? String(value) : null;

const malformed = (provider: IntegrationProvider, what: string) =>
  new ShipkeyError("INVALID_FIELD_VALUE", `Not a ${provider} event: ${what}`);
