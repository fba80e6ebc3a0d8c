import { createPublicKey, verify } from "node:crypto";

/**
 * Minisign public keys and signatures in the form the Tauri updater uses: each is the base64 of
 * the minisign file's text (`tauri.conf.json`'s `plugins.updater.pubkey`, and the `.sig` file
 * that `tauri signer sign` writes). Format: https://jedisct1.github.io/minisign/
 *
 * - public key file: `untrusted comment: …` then base64 of "Ed" ‖ key id (8) ‖ Ed25519 key (32);
 * - signature file: `untrusted comment: …`, base64 of algorithm ("Ed" legacy, "ED" prehashed)
 *   ‖ key id (8) ‖ signature of the file (64), `trusted comment: …`, then base64 of the global
 *   signature (64): Ed25519 over the file signature ‖ the trusted comment's text.
 *
 * Only the global signature can be checked without the file; it proves the signature was made
 * by the key and that its trusted comment is intact.
 */

export interface MinisignPublicKey {
  /** As minisign prints it: the 8 key-id bytes read little-endian, 16 uppercase hex digits. */
  keyId: string;
  /** The raw 32-byte Ed25519 public key. */
  key: Buffer;
}

export interface MinisignSignature {
  keyId: string;
  algorithm: "Ed" | "ED";
  fileSignature: Buffer;
  trustedComment: string;
  globalSignature: Buffer;
}

/** Standard alphabet, canonical padding: what the Tauri updater's base64 decoder accepts. */
const base64Pattern = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function isBase64(value: string): boolean {
  return value !== "" && base64Pattern.test(value);
}

/** The text a base64 value encodes, or null when it is not base64 of UTF-8 text. */
export function decodeBase64Text(value: string): string | null {
  if (!isBase64(value)) return null;
  const bytes = Buffer.from(value, "base64");
  const text = bytes.toString("utf8");
  return Buffer.from(text, "utf8").equals(bytes) ? text : null;
}

function keyIdOf(bytes: Buffer): string {
  return Buffer.from(bytes).reverse().toString("hex").toUpperCase();
}

/** The lines of a minisign file: CRLF or LF, trailing empty lines ignored. */
function linesOf(text: string): string[] {
  const lines = text.split(/\r?\n/);
  while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

const untrustedPrefix = "untrusted comment:";
const trustedPrefix = "trusted comment: ";

/** The key of a minisign public key file's text, or null if the text is not one (Ed25519). */
export function parsePublicKeyFile(text: string): MinisignPublicKey | null {
  const lines = linesOf(text);
  const [comment, encoded] = lines;
  if (lines.length !== 2 || !comment?.startsWith(untrustedPrefix) || encoded === undefined) {
    return null;
  }
  if (!isBase64(encoded)) return null;
  const bytes = Buffer.from(encoded, "base64");
  if (bytes.length !== 42 || bytes.toString("latin1", 0, 2) !== "Ed") return null;
  return { keyId: keyIdOf(bytes.subarray(2, 10)), key: bytes.subarray(10) };
}

/** A minisign signature file's parts, or null if the text is not one. */
export function parseSignatureFile(text: string): MinisignSignature | null {
  const lines = linesOf(text);
  const [comment, signatureLine, trustedLine, globalLine] = lines;
  if (
    lines.length !== 4 ||
    !comment?.startsWith(untrustedPrefix) ||
    signatureLine === undefined ||
    !trustedLine?.startsWith(trustedPrefix) ||
    globalLine === undefined ||
    !isBase64(signatureLine) ||
    !isBase64(globalLine)
  ) {
    return null;
  }
  const signature = Buffer.from(signatureLine, "base64");
  const globalSignature = Buffer.from(globalLine, "base64");
  if (signature.length !== 74 || globalSignature.length !== 64) return null;
  const algorithm = signature.toString("latin1", 0, 2);
  if (algorithm !== "Ed" && algorithm !== "ED") return null;
  return {
    keyId: keyIdOf(signature.subarray(2, 10)),
    algorithm,
    fileSignature: signature.subarray(10),
    trustedComment: trustedLine.slice(trustedPrefix.length),
    globalSignature,
  };
}

/** Whether the global signature (file signature ‖ trusted comment) verifies with the key. */
export function globalSignatureVerifies(
  signature: MinisignSignature,
  publicKey: MinisignPublicKey,
): boolean {
  const key = createPublicKey({
    key: { kty: "OKP", crv: "Ed25519", x: publicKey.key.toString("base64url") },
    format: "jwk",
  });
  const signed = Buffer.concat([signature.fileSignature, Buffer.from(signature.trustedComment)]);
  return verify(null, signed, key, signature.globalSignature);
}
