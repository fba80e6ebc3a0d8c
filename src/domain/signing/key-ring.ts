import type { KeyObject } from "node:crypto";
import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { decryptPrivateKey, type MasterKey } from "./key-material.js";
import { encryptedOf, ensureSigningKey, keyChangeCount } from "./signing-keys.js";
import { limits } from "../../contracts/vocabulary.js";

/** A product's current key, ready to sign. */
export interface SigningKey {
  kid: string;
  productId: string;
  productSlug: string;
  privateKey: KeyObject;
  /** The Shipkey-Key-Endorsements header value signed answers carry, or null. */
  endorsements: string | null;
}

/** How often a process re-reads which key is current: a rotation elsewhere is used within it. */
export const defaultKeyRefreshMs = 15_000;

interface Entry {
  key: SigningKey;
  checkedAt: number;
  /** keyChangeCount() when the key was read: a key change in this process since makes it stale. */
  changes: number;
}

interface Loading {
  promise: Promise<SigningKey | null>;
  changes: number;
}

/**
 * The decrypted current signing key of each product, kept in memory so that signing an answer
 * costs one Ed25519 signature and no query. Which key is current is re-read at the first use after
 * a key change made in this process (prepare, promote, remove: signing-keys.ts counts them), and
 * otherwise at most every `refreshMs` per product (a rotation by the CLI or another process is
 * picked up within it); the private key is decrypted again only when the kid changed. Holds only
 * products that exist. `now` is the clock of the refresh window (tests advance their own).
 */
export class SigningKeyRing {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Loading>();
  private readonly refreshMs: number;
  private readonly now: () => number;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly masterKey: MasterKey,
    options: { refreshMs?: number; now?: () => number } = {},
  ) {
    this.refreshMs = options.refreshMs ?? defaultKeyRefreshMs;
    this.now = options.now ?? Date.now;
  }

  /**
   * The product's current key: synchronously when known and fresh, else a promise (null when no
   * such product exists).
   */
  keyFor(productSlug: string): SigningKey | null | Promise<SigningKey | null> {
    const changes = keyChangeCount();
    const entry = this.entries.get(productSlug);
    if (entry && entry.changes === changes && this.now() - entry.checkedAt < this.refreshMs) {
      return entry.key;
    }
    if (productSlug.length > limits.identifier) return null;
    const pending = this.loading.get(productSlug);
    // A read begun before a key change may have missed it.
    if (pending && pending.changes === changes) return pending.promise;
    const loading: Loading = {
      changes,
      // A failed refresh (the database is down) keeps signing with the key already known.
      promise: this.load(productSlug, entry, changes)
        .catch((err: unknown) => {
          if (entry) return entry.key;
          throw err;
        })
        .finally(() => {
          if (this.loading.get(productSlug) === loading) this.loading.delete(productSlug);
        }),
    };
    this.loading.set(productSlug, loading);
    return loading.promise;
  }

  private async load(
    productSlug: string,
    previous: Entry | undefined,
    changes: number,
  ): Promise<SigningKey | null> {
    let rows = await this.readPublished(productSlug);
    if (!rows.some((row) => row.status === "current")) {
      // A product without a current key (created without the master key at hand) gets one now.
      const product = await this.db
        .selectFrom("products")
        .select("id")
        .where("slug", "=", productSlug)
        .executeTakeFirst();
      if (!product) {
        this.entries.delete(productSlug);
        return null;
      }
      await ensureSigningKey(this.db, this.masterKey, product.id);
      rows = await this.readPublished(productSlug);
    }
    const current = rows.find((row) => row.status === "current");
    if (!current) return null;
    // The current key's endorsement by its predecessor, then the next key's by the current one.
    const endorsements = [current, ...rows.filter((row) => row.status === "next")]
      .map((row) => row.endorsement)
      .filter((jws): jws is string => jws !== null);
    const key: SigningKey = {
      kid: current.kid,
      productId: current.product_id,
      productSlug,
      privateKey:
        previous &&
        previous.key.kid === current.kid &&
        previous.key.productId === current.product_id
          ? previous.key.privateKey
          : decryptPrivateKey(
              this.masterKey,
              current.product_id,
              current.kid,
              encryptedOf(current),
            ),
      endorsements: endorsements.length > 0 ? endorsements.join(", ") : null,
    };
    this.entries.set(productSlug, { key, checkedAt: this.now(), changes });
    return key;
  }

  /** The product's current key and its next key, if any. */
  private readPublished(productSlug: string) {
    return this.db
      .selectFrom("signing_keys")
      .innerJoin("products", "products.id", "signing_keys.product_id")
      .select([
        "signing_keys.kid",
        "signing_keys.status",
        "signing_keys.product_id",
        "signing_keys.private_key_iv",
        "signing_keys.private_key_ciphertext",
        "signing_keys.private_key_tag",
        "signing_keys.endorsement",
      ])
      .where("products.slug", "=", productSlug)
      .where("signing_keys.status", "in", ["current", "next"])
      .execute();
  }
}

/** The products' signing keys: the master key that opens them, and the current ones in memory. */
export interface Signing {
  masterKey: MasterKey;
  ring: SigningKeyRing;
}
