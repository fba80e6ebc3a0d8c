import { createHash, verify } from "node:crypto";
import type { Answer } from "./http.js";
import type { KeySource } from "./keys.js";

/** What the server signs (docs/client.md, "Signature format", version 2). */
export interface SignedParts {
  /** The request's path, without the query string. */
  path: string;
  /** The answer's HTTP status. */
  status: number;
  /** The answer's Date header, exactly as received. */
  date: string;
  /** The Shipkey-Nonce the client sent. */
  nonce: string;
  /** The exact request body bytes the client sent. */
  requestBody: Uint8Array;
  /** The exact answer body bytes received. */
  body: Uint8Array;
}

/** The seven lines of a version 2 signature, joined with "\n", no trailing newline. */
export function signingString(parts: SignedParts): string {
  return [
    "shipkey-signature: v2",
    `(request-target): post ${parts.path}`,
    `status: ${parts.status}`,
    `date: ${parts.date}`,
    `nonce: ${parts.nonce}`,
    `request-digest: sha-256=${sha256(parts.requestBody)}`,
    `digest: sha-256=${sha256(parts.body)}`,
  ].join("\n");
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("base64");
}

export interface SignatureHeader {
  keyid: string;
  algorithm: string;
  version: string;
  signature: string;
}

/** `keyid="…", algorithm="ed25519", version="2", signature="…"`; undefined when malformed. */
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
  const version = fields.get("version");
  const signature = fields.get("signature");
  if (!keyid || !algorithm || !version || signature === undefined) return undefined;
  return { keyid, algorithm, version, signature };
}

/**
 * valid; missing (no header); unknown-key (well-formed, by a kid this app does not trust, e.g.
 * another product's key); invalid (malformed, another version or algorithm, or not matching
 * under a trusted key: tampering).
 */
export type SignatureCheck = "valid" | "missing" | "unknown-key" | "invalid";

/**
 * Checks an answer's Shipkey-Signature against the trusted keys: version 2, Ed25519, by a trusted
 * kid, over this request's path, nonce and body bytes and the answer's status, Date and body
 * bytes.
 */
export async function checkSignature(answer: Answer, keys: KeySource): Promise<SignatureCheck> {
  const header = answer.headers.get("shipkey-signature");
  if (header === null) return "missing";
  const parsed = parseSignatureHeader(header);
  const date = answer.headers.get("date");
  if (!parsed || parsed.version !== "2" || parsed.algorithm !== "ed25519" || date === null) {
    return "invalid";
  }
  if (!/^[A-Za-z0-9+/]{86}==$/.test(parsed.signature)) return "invalid";
  const key = await keys.find(parsed.keyid).catch(() => undefined);
  if (!key) return "unknown-key";
  const data = Buffer.from(
    signingString({
      path: answer.path,
      status: answer.status,
      date,
      nonce: answer.nonce,
      requestBody: answer.requestBody,
      body: answer.body,
    }),
    "utf8",
  );
  try {
    return verify(null, data, key, Buffer.from(parsed.signature, "base64")) ? "valid" : "invalid";
  } catch {
    return "invalid";
  }
}
