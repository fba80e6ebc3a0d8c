import { createHash, webcrypto } from "node:crypto";
import type { Answer } from "./http.js";
import type { KeySource } from "./keys.js";

/** The four lines the server signs (docs/client.md, "Signature format"). */
export function signingString(answer: {
  path: string;
  date: string;
  body: Uint8Array;
  nonce: string;
}): string {
  const digest = createHash("sha256").update(answer.body).digest("base64");
  return [
    `(request-target): post ${answer.path}`,
    `date: ${answer.date}`,
    `digest: sha-256=${digest}`,
    `nonce: ${answer.nonce}`,
  ].join("\n");
}

export interface SignatureHeader {
  keyid: string;
  algorithm: string;
  signature: string;
}

/** `keyid="…", algorithm="ed25519", signature="…"`; undefined when malformed. */
export function parseSignatureHeader(value: string): SignatureHeader | undefined {
  const fields = new Map<string, string>();
  const pattern = /\s*([a-z]+)="([^"]*)"\s*(?:,|$)/gy;
  let match: RegExpExecArray | null;
  let end = 0;
  while ((match = pattern.exec(value)) !== null && match[0] !== "") {
    const [, name, content] = match;
    if (name === undefined || content === undefined || fields.has(name)) return undefined;
    fields.set(name, content);
    end = pattern.lastIndex;
  }
  if (end !== value.length) return undefined;
  const keyid = fields.get("keyid");
  const algorithm = fields.get("algorithm");
  const signature = fields.get("signature");
  if (keyid === undefined || algorithm === undefined || signature === undefined) return undefined;
  return { keyid, algorithm, signature };
}

/**
 * valid; missing (no header); unknown-key (well-formed, by a kid this app does not trust, e.g.
 * another product's key); invalid (malformed, or not matching under a trusted key: tampering).
 */
export type SignatureCheck = "valid" | "missing" | "unknown-key" | "invalid";

/**
 * Checks an answer's Shipkey-Signature against the trusted keys: the signature must be
 * Ed25519, by a trusted kid, over the path and nonce this client sent, the answer's Date header
 * and the SHA-256 of the exact body bytes.
 */
export async function checkSignature(answer: Answer, keys: KeySource): Promise<SignatureCheck> {
  const header = answer.headers.get("shipkey-signature");
  if (header === null) return "missing";
  const parsed = parseSignatureHeader(header);
  const date = answer.headers.get("date");
  if (!parsed || parsed.algorithm !== "ed25519" || date === null) return "invalid";
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(parsed.signature)) return "invalid";
  const key = await keys.find(parsed.keyid).catch(() => undefined);
  if (!key) return "unknown-key";
  const data = new TextEncoder().encode(
    signingString({ path: answer.path, date, body: answer.body, nonce: answer.nonce }),
  );
  const signature = Buffer.from(parsed.signature, "base64");
  try {
    const ok = await webcrypto.subtle.verify("Ed25519", key, signature, data);
    return ok ? "valid" : "invalid";
  } catch {
    return "invalid";
  }
}
