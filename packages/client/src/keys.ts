import type { webcrypto } from "node:crypto";
import { importJWK, type JWK } from "jose";
import { ShipkeyError } from "./errors.js";
import type { FetchFunction } from "./http.js";

type CryptoKey = webcrypto.CryptoKey;

/** A JWKS as `GET /api/products/{slug}/keys` answers it, or its `keys` array. */
export type PublicKeys = { keys: JWK[] } | JWK[];

/** The Ed25519 public keys an app trusts, by key id. */
export interface KeySource {
  /** The key with this kid, or undefined when it is not trusted. */
  find(kid: string): Promise<CryptoKey | undefined>;
}

/** Keys compiled into the app: the only source an attacker on the network cannot change. */
export class PinnedKeys implements KeySource {
  readonly #keys: Promise<Map<string, CryptoKey>>;

  constructor(keys: PublicKeys) {
    this.#keys = importKeySet(Array.isArray(keys) ? keys : keys.keys);
    // Reported on first use; an unhandled rejection here would crash the app at construction.
    this.#keys.catch(() => undefined);
  }

  async find(kid: string): Promise<CryptoKey | undefined> {
    return (await this.#keys).get(kid);
  }
}

/**
 * Keys fetched from the server's JWKS and remembered in storage (trust on first use): as safe as
 * the TLS connection of the first fetch. An unknown kid triggers one refetch, at most once a
 * minute, so a rotation is picked up.
 */
export class RemoteKeys implements KeySource {
  readonly #url: URL;
  readonly #fetch: FetchFunction;
  readonly #load: () => Promise<JWK[] | undefined>;
  readonly #save: (keys: JWK[]) => Promise<void>;
  #keys: Map<string, CryptoKey> | undefined;
  #lastFetch = Number.NEGATIVE_INFINITY;

  constructor(options: {
    url: URL;
    fetch: FetchFunction;
    load: () => Promise<JWK[] | undefined>;
    save: (keys: JWK[]) => Promise<void>;
  }) {
    this.#url = options.url;
    this.#fetch = options.fetch;
    this.#load = options.load;
    this.#save = options.save;
  }

  async find(kid: string): Promise<CryptoKey | undefined> {
    if (this.#keys === undefined) {
      const stored = await this.#load();
      if (stored) this.#keys = await importKeySet(stored).catch(() => undefined);
    }
    const known = this.#keys?.get(kid);
    if (known || Date.now() - this.#lastFetch < 60_000) return known;
    this.#lastFetch = Date.now();
    try {
      const response = await this.#fetch(this.#url, {
        headers: { accept: "application/json" },
        redirect: "error",
        signal: AbortSignal.timeout(10_000),
      });
      if (!response.ok) return undefined;
      const body = (await response.json()) as { keys?: unknown };
      if (!Array.isArray(body.keys)) return undefined;
      const jwks = body.keys as JWK[];
      this.#keys = await importKeySet(jwks);
      await this.#save(jwks);
    } catch {
      return undefined;
    }
    return this.#keys.get(kid);
  }
}

async function importKeySet(keys: JWK[]): Promise<Map<string, CryptoKey>> {
  const imported = new Map<string, CryptoKey>();
  for (const jwk of keys) {
    if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.kid !== "string") {
      throw new ShipkeyError("SIGNATURE_INVALID", "Public keys must be Ed25519 JWKs with a kid");
    }
    if (jwk.use !== undefined && jwk.use !== "sig") continue;
    if (jwk.alg !== undefined && jwk.alg !== "EdDSA" && jwk.alg !== "Ed25519") continue;
    // Only the public part is imported, whatever else the object holds.
    const key = await importJWK({ kty: "OKP", crv: "Ed25519", x: jwk.x }, "EdDSA");
    if (key instanceof Uint8Array) throw new ShipkeyError("SIGNATURE_INVALID", "Not a public key");
    imported.set(jwk.kid, key);
  }
  return imported;
}
