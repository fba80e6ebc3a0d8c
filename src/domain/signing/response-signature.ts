import { createHash, type KeyObject, sign } from "node:crypto";

/** The request header a client sends so that a replayed answer (for another nonce) is refused. */
export const nonceHeader = "shipkey-nonce";
export const signatureHeader = "shipkey-signature";

/**
 * The four lines an answer's signature covers, joined with "\n" (docs/client.md, "Signature
 * format"): the request's method and path (no query string), the Date header sent, the SHA-256
 * of the exact body bytes, and the request's nonce (empty when none was sent).
 */
export function signatureBase(
  path: string,
  date: string,
  body: string | Buffer,
  nonce: string,
): string {
  const digest = createHash("sha256").update(body).digest("base64");
  return `(request-target): post ${path}\ndate: ${date}\ndigest: sha-256=${digest}\nnonce: ${nonce}`;
}

/** The Shipkey-Signature header value: Ed25519 over the signature base. */
export function signatureHeaderValue(kid: string, privateKey: KeyObject, base: string): string {
  const signature = sign(null, Buffer.from(base), privateKey).toString("base64");
  return `keyid="${kid}", algorithm="ed25519", signature="${signature}"`;
}
