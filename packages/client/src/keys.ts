import { createHash, createPublicKey, type KeyObject } from "node:crypto";
import { compactVerify, decodeProtectedHeader, type JWK } from "jose";
import type { FetchFunction } from "./http.js";
import type { ShipkeyStorage } from "./storage.js";

/**
 * What the dashboard offers to copy, in any of its forms: the product's JWKS (`{keys: [...]}`),
 * an array of JWKs, one JWK, a PEM (SPKI) public key, or any of these as a JSON string.
 */
export type PublicKeys = { keys: JWK[] } | JWK[] | JWK | string;

/** An Ed25519 public key in the one form the SDK keeps: `kid` is the RFC 7638 thumbprint of x. */
export interface TrustedJwk {
  kty: "OKP";
  crv: "Ed25519";
  x: string;
  kid: string;
}

export const endorsementType = "shipkey-key-endorsement+jwt";

/** base64url(SHA-256(`{"crv":"Ed25519","kty":"OKP","x":"<x>"}`)): the JWK thumbprint (RFC 7638). */
export function thumbprint(x: string): string {
  return createHash("sha256")
    .update(JSON.stringify({ crv: "Ed25519", kty: "OKP", x }))
    .digest("base64url");
}

const pasteHint =
  "pass the product's JWKS ({keys: [...]}), one of its JWKs or its PEM public key, as shown on " +
  "the dashboard's product page (Products → Signing keys and offline use) or answered by GET /api/products/{slug}/keys";

/**
 * Converts what an app was given to pin into Ed25519 JWKs whose kid is their thumbprint. Throws a
 * TypeError naming what is wrong (not a key, a private key, not Ed25519, a kid that is not the
 * key's thumbprint, an empty set) and what to paste instead.
 */
export function parsePublicKeys(input: unknown): TrustedJwk[] {
  let value = input;
  if (typeof value === "string") {
    const text = value.trim();
    if (text.startsWith("-----BEGIN")) return [fromPem(text)];
    try {
      value = JSON.parse(text) as unknown;
    } catch {
      throw new TypeError(
        `publicKeys: the string is neither JSON nor a PEM public key; ${pasteHint}`,
      );
    }
    if (typeof value === "string") return parsePublicKeys(value);
  }
  let list: unknown[];
  if (Array.isArray(value)) list = value;
  else if (isRecord(value) && Array.isArray(value.keys)) list = value.keys;
  else if (isRecord(value) && "kty" in value) list = [value];
  else throw new TypeError(`publicKeys: not a JWKS, a JWK or a PEM public key; ${pasteHint}`);
  if (list.length === 0) throw new TypeError(`publicKeys: the key set is empty; ${pasteHint}`);
  return list.map((entry, index) => fromJwk(entry, list.length === 1 ? "" : ` (key ${index})`));
}

function fromPem(pem: string): TrustedJwk {
  if (/PRIVATE KEY/.test(pem)) {
    throw new TypeError(`publicKeys: this PEM is a private key, never ship it; ${pasteHint}`);
  }
  let key: KeyObject;
  try {
    key = createPublicKey({ key: pem, format: "pem" });
  } catch {
    throw new TypeError(`publicKeys: the PEM is not a readable public key; ${pasteHint}`);
  }
  return fromKeyObject(key, undefined, "");
}

function fromJwk(entry: unknown, where: string): TrustedJwk {
  if (!isRecord(entry) || typeof entry.kty !== "string") {
    throw new TypeError(`publicKeys${where}: not a JWK; ${pasteHint}`);
  }
  if ("d" in entry) {
    throw new TypeError(
      `publicKeys${where}: this JWK is a private key, never ship it; ${pasteHint}`,
    );
  }
  if (entry.kty !== "OKP" || entry.crv !== "Ed25519") {
    throw new TypeError(
      `publicKeys${where}: a ${String(entry.kty)}${entry.crv ? `/${String(entry.crv)}` : ""} key; Shipkey signs with Ed25519 (kty OKP, crv Ed25519); ${pasteHint}`,
    );
  }
  if (entry.alg !== undefined && entry.alg !== "EdDSA" && entry.alg !== "Ed25519") {
    throw new TypeError(`publicKeys${where}: alg ${String(entry.alg)} is not EdDSA`);
  }
  if (entry.use !== undefined && entry.use !== "sig") {
    throw new TypeError(`publicKeys${where}: use ${String(entry.use)} is not sig`);
  }
  let key: KeyObject;
  try {
    key = createPublicKey({
      key: { kty: "OKP", crv: "Ed25519", x: String(entry.x) },
      format: "jwk",
    });
  } catch {
    throw new TypeError(`publicKeys${where}: x is not an Ed25519 public key; ${pasteHint}`);
  }
  const kid = typeof entry.kid === "string" ? entry.kid : undefined;
  return fromKeyObject(key, kid, where);
}

function fromKeyObject(key: KeyObject, kid: string | undefined, where: string): TrustedJwk {
  if (key.asymmetricKeyType !== "ed25519") {
    throw new TypeError(
      `publicKeys${where}: a ${String(key.asymmetricKeyType)} key; Shipkey signs with Ed25519; ${pasteHint}`,
    );
  }
  const { x } = key.export({ format: "jwk" });
  if (typeof x !== "string") throw new TypeError(`publicKeys${where}: not an Ed25519 public key`);
  const expected = thumbprint(x);
  if (kid !== undefined && kid !== expected) {
    throw new TypeError(
      `publicKeys${where}: kid "${kid}" is not this key's thumbprint (${expected}); the JWK was altered or belongs to another key; ${pasteHint}`,
    );
  }
  return { kty: "OKP", crv: "Ed25519", x, kid: expected };
}

/** The Ed25519 public keys an app trusts, by key id. */
export interface KeySource {
  /** The key with this kid, or undefined when it is not trusted. */
  find(kid: string): Promise<KeyObject | undefined>;
  /**
   * Learns the keys these endorsements vouch for, each only when it verifies under a key that is
   * already trusted (so a learned key can vouch for the next); anything else is ignored.
   */
  learn(endorsements: readonly string[]): Promise<void>;
}

/** What verifying an endorsement gives: the key it vouches for. */
interface Endorsed {
  jwk: TrustedJwk;
  key: KeyObject;
}

/**
 * Checks one endorsement (a compact JWS, docs/client.md "Key rotation") against the trusted keys:
 * signed by a trusted kid with EdDSA, typ `shipkey-key-endorsement+jwt`, for this product, of an
 * Ed25519 key whose kid is its thumbprint. Undefined for anything else.
 */
export async function verifyEndorsement(
  jws: string,
  productSlug: string,
  trusted: (kid: string) => KeyObject | undefined,
): Promise<Endorsed | undefined> {
  try {
    const header = decodeProtectedHeader(jws);
    if (header.alg !== "EdDSA" || header.typ !== endorsementType) return undefined;
    if (typeof header.kid !== "string") return undefined;
    const signer = trusted(header.kid);
    if (!signer) return undefined;
    const { payload } = await compactVerify(jws, signer, { algorithms: ["EdDSA"] });
    const claims: unknown = JSON.parse(new TextDecoder().decode(payload));
    if (!isRecord(claims) || claims.product !== productSlug || !isRecord(claims.key)) {
      return undefined;
    }
    const { kty, crv, x, kid } = claims.key;
    if (kty !== "OKP" || crv !== "Ed25519" || typeof x !== "string" || typeof kid !== "string") {
      return undefined;
    }
    if (kid !== thumbprint(x)) return undefined;
    const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x }, format: "jwk" });
    if (key.asymmetricKeyType !== "ed25519") return undefined;
    return { jwk: { kty, crv, x, kid }, key };
  } catch {
    return undefined;
  }
}

/** At most this many endorsements are kept: a product rotates far less often. */
const maxEndorsements = 64;

/**
 * The trusted set: a root (pinned, or fetched once) and the keys learned through endorsements.
 * Learned keys are stored as their endorsements and verified again, from the root, each time
 * they are loaded: storage is the machine owner's to edit, so nothing in it is trusted as such.
 */
abstract class EndorsedKeys implements KeySource {
  readonly #productSlug: string;
  readonly #storage: ShipkeyStorage;
  #trusted: Map<string, KeyObject> | undefined;
  #endorsements: string[] = [];
  #loading: Promise<Map<string, KeyObject>> | undefined;

  constructor(productSlug: string, storage: ShipkeyStorage) {
    this.#productSlug = productSlug;
    this.#storage = storage;
  }

  /** The root keys, or undefined when there are none yet. */
  protected abstract root(): Promise<TrustedJwk[] | undefined>;

  async find(kid: string): Promise<KeyObject | undefined> {
    return (await this.trusted())?.get(kid);
  }

  async learn(endorsements: readonly string[]): Promise<void> {
    const trusted = await this.trusted();
    if (!trusted) return;
    const fresh = endorsements.filter((jws) => !this.#endorsements.includes(jws));
    const accepted = await this.#accept(trusted, fresh);
    if (accepted.length === 0) return;
    this.#endorsements = [...this.#endorsements, ...accepted].slice(-maxEndorsements);
    await this.#storage
      .set(this.#storageKey, JSON.stringify(this.#endorsements))
      .catch(() => undefined);
  }

  /** The root plus every stored endorsement that still verifies from it. */
  protected async trusted(): Promise<Map<string, KeyObject> | undefined> {
    if (this.#trusted) return this.#trusted;
    this.#loading ??= this.#load().finally(() => {
      this.#loading = undefined;
    });
    return this.#loading.then(
      (map) => (map.size > 0 ? map : undefined),
      () => undefined,
    );
  }

  async #load(): Promise<Map<string, KeyObject>> {
    const root = await this.root();
    const trusted = new Map<string, KeyObject>();
    if (!root) return trusted;
    for (const jwk of root) {
      trusted.set(jwk.kid, createPublicKey({ key: { ...jwk }, format: "jwk" }));
    }
    // A storage that cannot be read costs the learned keys, never the root.
    const stored = parseStringArray(
      await this.#storage.get(this.#storageKey).catch(() => undefined),
    );
    this.#endorsements = await this.#accept(trusted, stored);
    this.#trusted = trusted;
    return trusted;
  }

  /**
   * Adds to `trusted` the keys of the endorsements that verify, in as many passes as it takes
   * (an endorsement by a key learned in this call counts); the accepted JWSs are returned.
   */
  async #accept(trusted: Map<string, KeyObject>, candidates: readonly string[]): Promise<string[]> {
    const accepted: string[] = [];
    let pending = [...new Set(candidates)];
    let progress = true;
    while (progress && pending.length > 0) {
      progress = false;
      const next: string[] = [];
      for (const jws of pending) {
        const endorsed = await verifyEndorsement(jws, this.#productSlug, (kid) => trusted.get(kid));
        if (!endorsed) {
          next.push(jws);
          continue;
        }
        if (!trusted.has(endorsed.jwk.kid)) trusted.set(endorsed.jwk.kid, endorsed.key);
        accepted.push(jws);
        progress = true;
      }
      pending = next;
    }
    return accepted;
  }

  get #storageKey(): string {
    return `shipkey:${this.#productSlug}:endorsements`;
  }
}

/** Keys compiled into the app: a root that neither the network nor the machine's owner changes. */
export class PinnedKeys extends EndorsedKeys {
  readonly #root: TrustedJwk[];

  constructor(productSlug: string, storage: ShipkeyStorage, keys: PublicKeys) {
    super(productSlug, storage);
    this.#root = parsePublicKeys(keys);
  }

  protected async root(): Promise<TrustedJwk[]> {
    return this.#root;
  }
}

/**
 * The root is the first JWKS fetched from the server, kept in storage (trust on first use). A kid
 * not yet trusted makes it fetch the JWKS again, at most once a minute, but from that answer it
 * learns only keys whose `endorsement` verifies under a trusted key. The stored root lives in the
 * same storage as the license, so the machine's owner can replace it: this mode protects against
 * the network after the first fetch, never against the owner.
 */
export class RemoteKeys extends EndorsedKeys {
  readonly #url: URL;
  readonly #fetch: FetchFunction;
  readonly #storage: ShipkeyStorage;
  readonly #rootKey: string;
  #lastFetch = Number.NEGATIVE_INFINITY;

  constructor(options: {
    productSlug: string;
    url: URL;
    fetch: FetchFunction;
    storage: ShipkeyStorage;
  }) {
    super(options.productSlug, options.storage);
    this.#url = options.url;
    this.#fetch = options.fetch;
    this.#storage = options.storage;
    this.#rootKey = `shipkey:${options.productSlug}:jwks`;
  }

  protected async root(): Promise<TrustedJwk[] | undefined> {
    const stored = await this.#storage.get(this.#rootKey);
    if (stored !== undefined) {
      try {
        return parsePublicKeys(stored);
      } catch {
        // Unreadable: fetched again below, as on first use.
      }
    }
    const jwks = await this.#fetchJwks();
    if (!jwks) return undefined;
    let root: TrustedJwk[];
    try {
      root = parsePublicKeys({ keys: jwks.filter(isEd25519Jwk) });
    } catch {
      return undefined;
    }
    await this.#storage.set(this.#rootKey, JSON.stringify({ keys: root }));
    return root;
  }

  override async find(kid: string): Promise<KeyObject | undefined> {
    const trusted = await this.trusted();
    if (!trusted) return undefined;
    const known = trusted.get(kid);
    if (known) return known;
    const jwks = await this.#fetchJwks();
    if (!jwks) return undefined;
    const endorsements = jwks
      .map((jwk) => jwk.endorsement)
      .filter((jws): jws is string => typeof jws === "string");
    await this.learn(endorsements);
    return (await this.trusted())?.get(kid);
  }

  /** The JWKS's keys, at most once a minute; undefined when not fetched or unreadable. */
  async #fetchJwks(): Promise<Array<Record<string, unknown>> | undefined> {
    if (Date.now() - this.#lastFetch < 60_000) return undefined;
    this.#lastFetch = Date.now();
    try {
      const response = await this.#fetch(this.#url, {
        headers: { accept: "application/json" },
        redirect: "error",
        signal: AbortSignal.timeout(10_000),
      });
      if (!response.ok) return undefined;
      const body: unknown = await response.json();
      if (!isRecord(body) || !Array.isArray(body.keys)) return undefined;
      return body.keys.filter(isRecord);
    } catch {
      return undefined;
    }
  }
}

function isEd25519Jwk(jwk: Record<string, unknown>): boolean {
  return jwk.kty === "OKP" && jwk.crv === "Ed25519" && !("d" in jwk);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function parseStringArray(text: string | undefined): string[] {
  if (text === undefined) return [];
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
  } catch {
    return [];
  }
}
