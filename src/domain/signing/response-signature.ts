import { createHash, type KeyObject, sign } from "node:crypto";

/** The request header a client sends to ask for a signed answer bound to this request. */
export const nonceHeader = "shipkey-nonce";
export const signatureHeader = "shipkey-signature";
/** Signed answers name the product's endorsed keys here (docs/client.md, "Key rotation"). */
export const endorsementsHeader = "shipkey-key-endorsements";

/** The signature format's version: the header's `version` and the signed message's first line. */
export const signatureVersion = "2";

/** A nonce is 16 to 128 characters of base64url's alphabet (the SDK sends 22). */
export const noncePattern = /^[A-Za-z0-9_-]{16,128}$/;

export function isValidNonce(value: string): boolean {
  return noncePattern.test(value);
}

export interface SignedExchange {
  /** The request's path, without the query string. */
  path: string;
  status: number;
  /** The Date header sent with the answer. */
  date: string;
  nonce: string;
  /** The exact request body bytes received (empty when there were none). */
  requestBody: Buffer | string;
  /** The exact answer body bytes sent. */
  responseBody: Buffer | string;
}

const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("base64");

/**
 * The seven lines an answer's signature covers, joined with "\n" (docs/client.md, "Signature
 * format"): the version, the request's method and path, the status, the Date header sent, the
 * request's nonce, and the SHA-256 of the exact request and answer bodies.
 */
export function signatureBase(exchange: SignedExchange): string {
  return [
    `shipkey-signature: v${signatureVersion}`,
    `(request-target): post ${exchange.path}`,
    `status: ${exchange.status}`,
    `date: ${exchange.date}`,
    `nonce: ${exchange.nonce}`,
    `request-digest: sha-256=${sha256(exchange.requestBody)}`,
    `digest: sha-256=${sha256(exchange.responseBody)}`,
  ].join("\n");
}

/**
 * The Shipkey-Signature header value: Ed25519 over the signature base. The signature is computed
 * on libuv's thread pool (crypto.sign with a callback), off the event loop, which serves other
 * requests meanwhile.
 */
export function signatureHeaderValue(
  kid: string,
  privateKey: KeyObject,
  base: string,
  callback: (err: Error | null, value: string) => void,
): void {
  sign(null, Buffer.from(base), privateKey, (err, signature) => {
    if (err) callback(err, "");
    else
      callback(
        null,
        `keyid="${kid}", algorithm="ed25519", version="${signatureVersion}", signature="${signature.toString("base64")}"`,
      );
  });
}
