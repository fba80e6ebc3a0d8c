import { lookup } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { isPrivateAddress } from "./address-guard.js";

export interface SendPolicy {
  /** WEBHOOKS_ALLOW_PRIVATE: http, and private, loopback and link-local addresses. */
  allowPrivate: boolean;
  /** The whole attempt (resolution, connection, answer) within this many ms. */
  timeoutMs: number;
}

export interface SendOutcome {
  ok: boolean;
  /** The answer's status; null when there was none. */
  status: number | null;
  /** What the admin API shows of a failure: `noAnswer`, a refused scheme or a redirect. */
  error: string | null;
  /** What the server's log says of a failure without an answer: which one it was. */
  detail: string | null;
  /** How long the answer took; null without one. */
  durationMs: number | null;
}

/**
 * The one error a failure without an answer shows, whatever it was (a refused address, DNS, a
 * connection refused or reset, TLS, a timeout): what the log alone says, as a key holder must
 * not learn which internal hosts and ports exist.
 */
export const noAnswer = "no answer";

/**
 * POSTs one delivery. The host is resolved here, at every attempt, and every address it
 * resolves to is checked (unless allowPrivate): the connection then goes to the checked address
 * only, so a DNS answer that changes in between cannot lead it elsewhere. Redirects are not
 * followed (a 3xx is a failure); any 2xx is a success. A failure without an answer ends at the
 * deadline, however early it was known, so neither its error nor its time tells which it was.
 */
export async function sendWebhook(
  urlText: string,
  headers: Record<string, string>,
  body: string,
  policy: SendPolicy,
): Promise<SendOutcome> {
  const started = performance.now();
  const answered = (status: number, error: string | null = null): SendOutcome => ({
    ok: status >= 200 && status < 300,
    status,
    error,
    detail: null,
    durationMs: Math.round(performance.now() - started),
  });
  const url = new URL(urlText);
  if (url.protocol !== "https:" && !(policy.allowPrivate && url.protocol === "http:")) {
    const error = `${url.protocol} URLs are not allowed`;
    return { ok: false, status: null, error, detail: error, durationMs: null };
  }
  const deadline = AbortSignal.timeout(policy.timeoutMs);
  const failed = async (detail: string): Promise<SendOutcome> => {
    if (!deadline.aborted) {
      await new Promise((resolve) => deadline.addEventListener("abort", resolve, { once: true }));
    }
    return { ok: false, status: null, error: noAnswer, detail, durationMs: null };
  };
  const host = url.hostname.replace(/^\[|\]$/g, "");
  let address: { address: string; family: number };
  try {
    const addresses =
      isIP(host) !== 0
        ? [{ address: host, family: isIP(host) }]
        : await raceDeadline(lookup(host, { all: true, verbatim: true }), deadline);
    const refused = addresses.find((a) => isPrivateAddress(a.address));
    if (!policy.allowPrivate && refused) {
      return await failed(`refused: ${host} resolves to private address ${refused.address}`);
    }
    const first = addresses[0];
    if (!first) return await failed(`${host} resolves to no address`);
    address = first;
  } catch (err) {
    return await failed(deadline.aborted ? "timed out" : `DNS: ${messageOf(err)}`);
  }
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if (options.all) callback(null, [address]);
    else callback(null, address.address, address.family);
  };
  return new Promise((resolve) => {
    const request = (url.protocol === "https:" ? https : http).request(url, {
      method: "POST",
      headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
      lookup: pinned,
      // A new connection per attempt: a pooled one would skip the address check.
      agent: false,
      signal: deadline,
    });
    request.on("response", (response) => {
      const status = response.statusCode ?? 0;
      // The answer's body is not kept; read it so the connection ends cleanly.
      response.resume();
      response.on("end", () =>
        resolve(answered(status, status >= 300 && status < 400 ? "redirect not followed" : null)),
      );
      // An answer cut off after its status (the deadline, a reset) is judged by its status.
      const settle = () => resolve(answered(status));
      response.on("error", settle);
      response.on("close", settle);
    });
    request.on("error", (err) => resolve(failed(deadline.aborted ? "timed out" : messageOf(err))));
    request.end(body);
  });
}

function raceDeadline<T>(work: Promise<T>, deadline: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    deadline.addEventListener("abort", () => reject(new Error("timed out")), { once: true });
    work.then(resolve, reject);
  });
}

const messageOf = (err: unknown) =>
  (err instanceof Error ? err.message : String(err)).slice(0, 200);
