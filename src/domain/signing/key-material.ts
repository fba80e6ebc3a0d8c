import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
} from "node:crypto";
import type { Jwk } from "../../contracts/license-api.js";

/** The master key that encrypts every private signing key: 32 bytes, for AES-256-GCM. */
export type MasterKey = Buffer;

export const masterKeyBytes = 32;

/** A public key as a JWK, the form the JWKS endpoint, the dashboard and clients use. */
export type PublicJwk = Jwk;

/** A freshly generated key pair, its private half already encrypted for storage. */
export interface GeneratedKey {
  kid: string;
  publicX: string;
  encrypted: EncryptedPrivateKey;
}

export interface EncryptedPrivateKey {
  iv: string;
  ciphertext: string;
  tag: string;
}

/** Thrown when the master key does not open a stored private key (another master key). */
export class MasterKeyMismatchError extends Error {
  override name = "MasterKeyMismatchError";
}

/**
 * A new Ed25519 key pair for a product. The kid is the public key's JWK thumbprint (RFC 7638),
 * so anyone can recompute it from the key.
 */
export function generateSigningKey(masterKey: MasterKey, productId: string): GeneratedKey {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const publicX = rawPublicKey(publicKey);
  const kid = jwkThumbprint(publicX);
  const der = privateKey.export({ format: "der", type: "pkcs8" });
  return { kid, publicX, encrypted: encryptPrivateKey(masterKey, productId, kid, der) };
}

/** The JWK's `x`: the raw 32-byte public key, base64url. */
function rawPublicKey(publicKey: KeyObject): string {
  const jwk = publicKey.export({ format: "jwk" });
  if (typeof jwk.x !== "string") throw new Error("Ed25519 public key without x");
  return jwk.x;
}

export function jwkThumbprint(publicX: string): string {
  return createHash("sha256")
    .update(`{"crv":"Ed25519","kty":"OKP","x":"${publicX}"}`)
    .digest("base64url");
}

export function publicJwk(kid: string, publicX: string): PublicJwk {
  return { kty: "OKP", crv: "Ed25519", x: publicX, kid, alg: "EdDSA", use: "sig" };
}

/** The public key as PEM (SPKI), for tools that take PEM. */
export function publicPem(publicX: string): string {
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: publicX }, format: "jwk" })
    .export({ format: "pem", type: "spki" })
    .toString();
}

// The associated data ties a ciphertext to its key and product: a row's encrypted private key
// copied onto another row (or product) does not decrypt.
const associatedData = (productId: string, kid: string) =>
  Buffer.from(`shipkey-signing-key:v1:${productId}:${kid}`);

function encryptPrivateKey(
  masterKey: MasterKey,
  productId: string,
  kid: string,
  der: Buffer,
): EncryptedPrivateKey {
  return sealUnderMasterKey(masterKey, associatedData(productId, kid), der);
}

/**
 * Seals `plaintext` under the master key (AES-256-GCM, a fresh iv), bound to `aad`: a sealed
 * value opens only with the same associated data (its row, its purpose).
 */
export function sealUnderMasterKey(
  masterKey: MasterKey,
  aad: Buffer,
  plaintext: Buffer,
): EncryptedPrivateKey {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", masterKey, iv);
  cipher.setAAD(aad);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return {
    iv: iv.toString("base64"),
    ciphertext: ciphertext.toString("base64"),
    tag: cipher.getAuthTag().toString("base64"),
  };
}

/** Opens what sealUnderMasterKey sealed; throws when the key or the associated data differ. */
export function openUnderMasterKey(
  masterKey: MasterKey,
  aad: Buffer,
  sealed: EncryptedPrivateKey,
): Buffer {
  // The tag's length is pinned: GCM would otherwise accept a tag truncated to 4 bytes.
  const decipher = createDecipheriv("aes-256-gcm", masterKey, Buffer.from(sealed.iv, "base64"), {
    authTagLength: 16,
  });
  decipher.setAAD(aad);
  decipher.setAuthTag(Buffer.from(sealed.tag, "base64"));
  return Buffer.concat([
    decipher.update(Buffer.from(sealed.ciphertext, "base64")),
    decipher.final(),
  ]);
}

/** Opens a stored private key; MasterKeyMismatchError when this master key did not seal it. */
export function decryptPrivateKey(
  masterKey: MasterKey,
  productId: string,
  kid: string,
  encrypted: EncryptedPrivateKey,
): KeyObject {
  const der = openPrivateKey(masterKey, productId, kid, encrypted);
  return createPrivateKey({ key: der, format: "der", type: "pkcs8" });
}

/** The private key sealed again under another master key (`shipkey master-key rotate`). */
export function resealPrivateKey(
  from: MasterKey,
  to: MasterKey,
  productId: string,
  kid: string,
  encrypted: EncryptedPrivateKey,
): EncryptedPrivateKey {
  return encryptPrivateKey(to, productId, kid, openPrivateKey(from, productId, kid, encrypted));
}

function openPrivateKey(
  masterKey: MasterKey,
  productId: string,
  kid: string,
  encrypted: EncryptedPrivateKey,
): Buffer {
  try {
    return openUnderMasterKey(masterKey, associatedData(productId, kid), encrypted);
  } catch {
    throw new MasterKeyMismatchError(
      `the master key does not decrypt signing key ${kid}: it is not the master key that sealed it`,
    );
  }
}

/**
 * SHIPKEY_MASTER_KEY's text: 32 bytes as base64 (`openssl rand -base64 32`) or as 64 hex
 * digits. Returns null for anything else.
 */
export function parseMasterKey(text: string): MasterKey | null {
  const trimmed = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, "hex");
  if (/^[A-Za-z0-9+/]{43}=$/.test(trimmed) || /^[A-Za-z0-9_-]{43}$/.test(trimmed)) {
    const bytes = Buffer.from(trimmed, trimmed.endsWith("=") ? "base64" : "base64url");
    return bytes.length === masterKeyBytes ? bytes : null;
  }
  return null;
}

/**
 * Whether a master key is one byte repeated (all zero, all 0xff, …): the mark of a placeholder,
 * never of 32 random bytes. Such a key is refused wherever a master key is read.
 */
export function isRepeatedByteKey(key: MasterKey): boolean {
  return key.every((byte) => byte === key[0]);
}
