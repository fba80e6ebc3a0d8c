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
  /** Why there was no (2xx) answer: a refused address, a timeout, a connection error. */
  error: string | null;
  durationMs: number;
}

/**
 * POSTs one delivery. The host is resolved here, at every attempt, and every address it
 * resolves to is checked (unless allowPrivate): the connection then goes to the checked address
 * only, so a DNS answer that changes in between cannot lead it elsewhere. Redirects are not
 * followed (a 3xx is a failure); any 2xx is a success.
 */
export async function sendWebhook(
  urlText: string,
  headers: Record<string, string>,
  body: string,
  policy: SendPolicy,
): Promise<SendOutcome> {
  const started = performance.now();
  const outcome = (ok: boolean, status: number | null, error: string | null): SendOutcome => ({
    ok,
    status,
    error,
    durationMs: Math.round(performance.now() - started),
  });
  const url = new URL(urlText);
  if (url.protocol !== "https:" && !(policy.allowPrivate && url.protocol === "http:")) {
    return outcome(false, null, `${url.protocol} URLs are not allowed`);
  }
  const deadline = AbortSignal.timeout(policy.timeoutMs);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  let address: { address: string; family: number };
  try {
    const addresses =
      isIP(host) !== 0
        ? [{ address: host, family: isIP(host) }]
        : await raceDeadline(lookup(host, { all: true, verbatim: true }), deadline);
    const refused = addresses.find((a) => isPrivateAddress(a.address));
    if (!policy.allowPrivate && refused) {
      return outcome(
        false,
        null,
        `refused: ${host} resolves to private address ${refused.address}`,
      );
    }
    const first = addresses[0];
    if (!first) return outcome(false, null, `${host} resolves to no address`);
    address = first;
  } catch (err) {
    return outcome(false, null, deadline.aborted ? "timed out" : `DNS: ${messageOf(err)}`);
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
        resolve(
          outcome(
            status >= 200 && status < 300,
            status,
            status >= 300 && status < 400 ? "redirect not followed" : null,
          ),
        ),
      );
      // An answer cut off after its status (the deadline, a reset) is judged by its status.
      const settle = () => resolve(outcome(status >= 200 && status < 300, status, null));
      response.on("error", settle);
      response.on("close", settle);
    });
    request.on("error", (err) =>
      resolve(outcome(false, null, deadline.aborted ? "timed out" : messageOf(err))),
    );
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
