import { randomBytes } from "node:crypto";
import { ShipkeyError } from "./errors.js";

export type FetchFunction = typeof globalThis.fetch;

/** Retries of one call: network errors and 502/503/504 only, never a 4xx. */
export interface RetryOptions {
  /** Attempts in all, the first included (default 3; 1 disables retries). */
  attempts: number;
  /** First backoff; doubled per attempt, with jitter (default 250 ms). */
  baseDelayMs: number;
  /** Cap of one backoff (default 5 s). */
  maxDelayMs: number;
  /** A Retry-After longer than this is not waited for: the call fails at once (default 30 s). */
  maxRetryAfterMs: number;
  /** Time allowed for one attempt (default 10 s). */
  timeoutMs: number;
}

export const defaultRetry: RetryOptions = {
  attempts: 3,
  baseDelayMs: 250,
  maxDelayMs: 5_000,
  maxRetryAfterMs: 30_000,
  timeoutMs: 10_000,
};

/** An answer, with the exact body bytes and what the request sent (for the signature). */
export interface Answer {
  status: number;
  headers: Headers;
  body: Uint8Array;
  /** The request's path, query excluded, as the server signs it. */
  path: string;
  /** The Shipkey-Nonce of the attempt that got this answer. */
  nonce: string;
  /** The exact request body bytes sent (empty without a body). */
  requestBody: Uint8Array;
}

export interface SendOptions {
  fetch: FetchFunction;
  retry: RetryOptions;
  /** Injected in tests; a real timer otherwise. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

const retriedStatuses = new Set([502, 503, 504]);

/** A fresh random nonce (128 bits, base64url) for one request. */
export function newNonce(): string {
  return randomBytes(16).toString("base64url");
}

/**
 * Sends one request, retrying on network errors and 502/503/504 with exponential backoff and
 * jitter, honouring Retry-After. Every attempt carries its own nonce. Gives the last answer when
 * the retries are spent on a 5xx, and throws NETWORK_ERROR when no answer came at all.
 */
export async function send(
  url: URL,
  init: { method: "GET" | "POST"; body?: unknown; headers?: Record<string, string> },
  options: SendOptions,
): Promise<Answer> {
  const sleep = options.sleep ?? ((ms: number) => new Promise((r) => setTimeout(r, ms)));
  const random = options.random ?? Math.random;
  const { retry } = options;
  const attempts = Math.max(1, Math.floor(retry.attempts));
  // Serialised once: these bytes are sent, and their digest is what the signature covers.
  const requestBody =
    init.body === undefined ? new Uint8Array(0) : Buffer.from(JSON.stringify(init.body), "utf8");
  let lastError: unknown;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const nonce = newNonce();
    const headers: Record<string, string> = {
      ...init.headers,
      accept: "application/json",
      "shipkey-nonce": nonce,
    };
    if (init.body !== undefined) headers["content-type"] = "application/json";
    let response: Response;
    try {
      response = await options.fetch(url, {
        method: init.method,
        headers,
        body: init.body === undefined ? undefined : requestBody,
        redirect: "error",
        signal: AbortSignal.timeout(retry.timeoutMs),
      });
    } catch (error) {
      lastError = error;
      if (attempt < attempts) await sleep(backoff(attempt, retry, random));
      continue;
    }
    let body: Uint8Array;
    try {
      body = new Uint8Array(await response.arrayBuffer());
    } catch (error) {
      lastError = error;
      if (attempt < attempts) await sleep(backoff(attempt, retry, random));
      continue;
    }
    const answer: Answer = {
      status: response.status,
      headers: response.headers,
      body,
      path: url.pathname,
      nonce,
      requestBody,
    };
    if (!retriedStatuses.has(response.status) || attempt === attempts) return answer;
    const retryAfter = retryAfterMs(response.headers.get("retry-after"), Date.now());
    if (retryAfter !== undefined && retryAfter > retry.maxRetryAfterMs) return answer;
    await sleep(Math.max(backoff(attempt, retry, random), retryAfter ?? 0));
  }
  throw new ShipkeyError("NETWORK_ERROR", `Cannot reach the Shipkey server at ${url.origin}`, {
    cause: lastError,
  });
}

/** Exponential backoff with jitter: between half and all of min(max, base * 2^(attempt-1)). */
export function backoff(attempt: number, retry: RetryOptions, random: () => number): number {
  const ceiling = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** Retry-After as delta-seconds or an HTTP date, in ms from now; undefined if absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
