import { record, text } from "../../domain/integrations/inbound-event.js";
import { parseIsoTimestamp } from "../../lib/time.js";

/** Readers of a provider's JSON: a missing or mistyped field reads as null. */
export const obj = (value: unknown): Record<string, unknown> => record(value) ?? {};
export const str = (value: unknown): string | null => text(value);
export const idOf = (value: unknown): string | null =>
  text(value) ??
  (typeof value === "number" && Number.isFinite(value) ? String(value) : null) ??
  text(record(value)?.id);
export const num = (value: unknown): number | null =>
  typeof value === "number" && Number.isFinite(value) ? value : null;
export const list = (value: unknown): Record<string, unknown>[] =>
  Array.isArray(value) ? value.map(obj) : [];
/** Seconds since the epoch (Stripe) as epoch ms. */
export const seconds = (value: unknown): number | null => {
  const n = num(value);
  return n === null ? null : n * 1000;
};
export const iso = (value: unknown): number | null => {
  const t = text(value);
  return t === null ? null : parseIsoTimestamp(t.replace(/(\.\d{3})\d+/, "$1"));
};
/** A positive whole quantity (default 1). */
export const quantityOf = (value: unknown): number => {
  const n = typeof value === "string" ? Number(value) : num(value);
  return n !== null && Number.isSafeInteger(n) && n >= 1 ? n : 1;
};
