import { createHmac, timingSafeEqual } from "node:crypto";
import Stripe from "stripe";
import { ShipkeyError } from "../../errors.js";
import type { IntegrationProvider } from "../../contracts/vocabulary.js";

/**
 * Each provider's webhook signature, checked on the raw body as the provider specifies, with each
 * of the integration's secrets (two during a rotation). A missing or wrong signature or a stale
 * timestamp throws a 400 ShipkeyError; nothing is read from the body before it verified.
 */
export interface SignatureOptions {
  /** Paddle's tolerance in seconds (PADDLE_SIGNATURE_TOLERANCE, default 5). */
  paddleToleranceSeconds: number;
  /** Epoch ms: the time a timestamp is judged against. */
  now: number;
}

type Headers = Record<string, string | string[] | undefined>;

export const signatureHeaders: Record<IntegrationProvider, string> = {
  stripe: "stripe-signature",
  paddle: "paddle-signature",
  lemonsqueezy: "x-signature",
};

export function verifySignature(
  provider: IntegrationProvider,
  body: Buffer,
  headers: Headers,
  secrets: readonly string[],
  options: SignatureOptions,
): void {
  const name = signatureHeaders[provider];
  const value = headers[name];
  const header = Array.isArray(value) ? value.join(",") : value;
  if (header === undefined || header.trim() === "") {
    throw new ShipkeyError(
      "WEBHOOK_SIGNATURE_MISSING",
      `The ${headerTitle(name)} header is missing`,
    );
  }
  if (provider === "stripe") verifyStripe(body, header, secrets, options.now);
  else if (provider === "paddle") verifyPaddle(body, header, secrets, options);
  else verifyLemonSqueezy(body, header, secrets);
}

/**
 * Stripe-Signature through the stripe library's constructEvent (its default tolerance of 300 s,
 * any matching v1), tried with each secret. It checks the signature before the timestamp, so a
 * tolerance error means a secret matched.
 */
function verifyStripe(body: Buffer, header: string, secrets: readonly string[], now: number): void {
  let stale = false;
  for (const secret of secrets) {
    try {
      Stripe.webhooks.constructEvent(body, header, secret, undefined, undefined, now);
      return;
    } catch (err) {
      // constructEvent parses the body once the signature verified: a signed body that is not
      // JSON is refused when it is read (INVALID_JSON).
      if (err instanceof SyntaxError) return;
      if (!(err instanceof Stripe.errors.StripeSignatureVerificationError)) throw err;
      if (err.message.startsWith("Timestamp outside the tolerance zone")) stale = true;
    }
  }
  throw stale ? staleTimestamp() : invalidSignature("Stripe-Signature");
}

/**
 * Paddle-Signature `ts=<unix>;h1=<hex>[;h1=<hex>…]`: HMAC-SHA256 of `ts:body`, any h1 (Paddle
 * signs with each secret during a rotation), compared in constant time; a ts further than the
 * tolerance from now, either way, is stale. Paddle's SDK keeps only the last h1, so it is
 * verified here.
 */
function verifyPaddle(
  body: Buffer,
  header: string,
  secrets: readonly string[],
  options: SignatureOptions,
): void {
  let ts: string | undefined;
  const signatures: string[] = [];
  for (const part of header.split(";")) {
    const at = part.indexOf("=");
    if (at < 0) continue;
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === "ts") ts = value;
    else if (key === "h1") signatures.push(value);
  }
  if (ts === undefined || !/^\d{1,12}$/.test(ts) || signatures.length === 0) {
    throw invalidSignature("Paddle-Signature");
  }
  const signed = Buffer.concat([Buffer.from(`${ts}:`), body]);
  if (!secrets.some((secret) => matchesAny(hmacHex(secret, signed), signatures))) {
    throw invalidSignature("Paddle-Signature");
  }
  if (Math.abs(options.now / 1000 - Number(ts)) > options.paddleToleranceSeconds) {
    throw staleTimestamp();
  }
}

/** X-Signature: the hex HMAC-SHA256 of the body, compared in constant time. */
function verifyLemonSqueezy(body: Buffer, header: string, secrets: readonly string[]): void {
  const given = header.trim();
  if (!secrets.some((secret) => matchesAny(hmacHex(secret, body), [given]))) {
    throw invalidSignature("X-Signature");
  }
}

const hmacHex = (secret: string, data: Buffer) =>
  createHmac("sha256", secret).update(data).digest("hex");

/** Constant time for each candidate of the expected length (hex digests are 64 characters). */
function matchesAny(expected: string, candidates: readonly string[]): boolean {
  const want = Buffer.from(expected, "utf8");
  let found = false;
  for (const candidate of candidates) {
    const given = Buffer.from(candidate.toLowerCase(), "utf8");
    if (given.length === want.length && timingSafeEqual(given, want)) found = true;
  }
  return found;
}

const headerTitle = (name: string) =>
  name === "x-signature" ? "X-Signature" : name.replace(/(^|-)[a-z]/g, (c) => c.toUpperCase());

const invalidSignature = (header: string) =>
  new ShipkeyError(
    "WEBHOOK_SIGNATURE_INVALID",
    `The ${header} header does not verify with this integration's secrets`,
  );

const staleTimestamp = () =>
  new ShipkeyError(
    "WEBHOOK_TIMESTAMP_STALE",
    "The signature's timestamp is outside the tolerance: a delayed or replayed event",
  );
