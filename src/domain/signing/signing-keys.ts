import { SignJWT } from "jose";
import { type Kysely, sql, type Transaction } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { toIso } from "../../lib/time.js";
import { requireProduct } from "../products/products.js";
import {
  decryptPrivateKey,
  generateSigningKey,
  type GeneratedKey,
  type MasterKey,
  publicJwk,
  publicPem,
  resealPrivateKey,
} from "./key-material.js";
import { refuseWhileServersRun } from "../maintenance/service-processes.js";
import {
  keyCheckMismatch,
  opensKeyCheck,
  readKeyCheck,
  replaceKeyCheck,
} from "./master-key-check.js";
import { type SigningKeyStatus } from "../../contracts/vocabulary.js";
import type { SigningKey } from "../../contracts/products.js";
import type { PublishedJwk } from "../../contracts/license-api.js";

/** A signing key as admins see it: never the private half. */
export type SigningKeyView = SigningKey;

let keyChanges = 0;

/**
 * How many key changes (prepare, promote, remove) this process has made: every SigningKeyRing
 * re-reads a key it read before the latest, so the next answer after a rotation, whoever made it
 * here, is signed with the new key. Counted at the end of the change's transaction: on SQLite a
 * re-read waits for its commit; on PostgreSQL a re-read in the instant before the commit may see
 * the old key, used then at most for the ring's refresh window, as after a rotation elsewhere.
 */
export const keyChangeCount = (): number => keyChanges;

/**
 * Gives the product a current key unless it has one. Safe when several processes race: the
 * partial unique index admits one current key per product, and the losers' inserts do nothing.
 */
export async function ensureSigningKey(
  db: Kysely<DB>,
  masterKey: MasterKey,
  productId: string,
  now = Date.now(),
): Promise<void> {
  const existing = await db
    .selectFrom("signing_keys")
    .select("kid")
    .where("product_id", "=", productId)
    .where("status", "=", "current")
    .executeTakeFirst();
  if (existing) return;
  await insertCurrentKey(db, masterKey, productId, now);
}

/**
 * Stores a generated key as the product's `current` or `next` key. The partial unique index of
 * that status admits one per product: a racing insert does nothing and this answers null.
 */
async function insertKey(
  db: Kysely<DB>,
  productId: string,
  key: GeneratedKey,
  status: "current" | "next",
  now: number,
  endorsement: string | null = null,
): Promise<string | null> {
  const inserted = await db
    .insertInto("signing_keys")
    .values({
      kid: key.kid,
      product_id: productId,
      public_x: key.publicX,
      private_key_iv: key.encrypted.iv,
      private_key_ciphertext: key.encrypted.ciphertext,
      private_key_tag: key.encrypted.tag,
      status,
      created_at: now,
      retired_at: null,
      endorsement,
    })
    // The conflict target names the partial index; its predicate must be the index's literal.
    .onConflict((oc) => oc.column("product_id").where("status", "=", sql.lit(status)).doNothing())
    .returning("kid")
    .executeTakeFirst();
  return inserted?.kid ?? null;
}

const insertCurrentKey = (db: Kysely<DB>, masterKey: MasterKey, productId: string, now: number) =>
  insertKey(db, productId, generateSigningKey(masterKey, productId), "current", now);

const rotationConflict = () =>
  new ShipkeyError("KEY_ROTATION_CONFLICT", "Another key rotation is under way; try again");

/** Every product without a current key gets one (the service runs this at start). */
export async function ensureAllSigningKeys(
  db: Kysely<DB>,
  masterKey: MasterKey,
  now = Date.now(),
): Promise<number> {
  const missing = await db
    .selectFrom("products")
    .select("id")
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom("signing_keys")
            .select("kid")
            .whereRef("signing_keys.product_id", "=", "products.id")
            .where("signing_keys.status", "=", "current"),
        ),
      ),
    )
    .execute();
  // Known to lack one: no second look (a process racing this one makes its insert do nothing).
  for (const { id } of missing) await insertCurrentKey(db, masterKey, id, now);
  return missing.length;
}

/**
 * Opens every stored private key (current, next and retired); MasterKeyMismatchError, naming the
 * kid, for the first that this master key did not seal: the service refuses to start rather than
 * sign nothing.
 */
export async function assertMasterKeyOpensKeys(
  db: Kysely<DB>,
  masterKey: MasterKey,
): Promise<void> {
  const rows = await db
    .selectFrom("signing_keys")
    .select(["kid", "product_id", "private_key_iv", "private_key_ciphertext", "private_key_tag"])
    .orderBy("created_at")
    .orderBy("kid")
    .execute();
  for (const row of rows) decryptPrivateKey(masterKey, row.product_id, row.kid, encryptedOf(row));
}

export const encryptedOf = (row: {
  private_key_iv: string;
  private_key_ciphertext: string;
  private_key_tag: string;
}) => ({
  iv: row.private_key_iv,
  ciphertext: row.private_key_ciphertext,
  tag: row.private_key_tag,
});

/** The order keys are listed in: the one that signs, the one that will, then the retired. */
const statusOrder: Record<SigningKeyStatus, number> = { current: 0, next: 1, retired: 2 };

/** The product's public keys: current, then next, then retired ones newest first. */
export async function listProductKeys(
  db: Kysely<DB>,
  productSlug: string,
): Promise<SigningKeyView[]> {
  const product = await requireProduct(db, productSlug);
  const rows = await db
    .selectFrom("signing_keys")
    .select(["kid", "public_x", "status", "created_at", "retired_at", "endorsement"])
    .where("product_id", "=", product.id)
    .orderBy("created_at", "desc")
    .orderBy("kid")
    .execute();
  return rows
    .sort((a, b) => statusOrder[a.status] - statusOrder[b.status])
    .map((row) => ({
      kid: row.kid,
      status: row.status,
      createdAt: toIso(row.created_at),
      retiredAt: row.retired_at === null ? null : toIso(row.retired_at),
      endorsement: row.endorsement,
      jwk: publicJwk(row.kid, row.public_x),
      pem: publicPem(row.public_x),
    }));
}

/** The public JWKS of a product: `{keys: [current, next?, ...retired]}`. */
export async function productJwks(
  db: Kysely<DB>,
  productSlug: string,
): Promise<{ keys: PublishedJwk[] }> {
  return {
    keys: (await listProductKeys(db, productSlug)).map((key) => ({
      ...key.jwk,
      status: key.status,
      ...(key.endorsement === null ? {} : { endorsement: key.endorsement }),
    })),
  };
}

/** The JWS `typ` of a key endorsement (docs/client.md, "Key rotation"). */
export const endorsementType = "shipkey-key-endorsement+jwt";

/**
 * Step one of a rotation: a `next` key, published in the JWKS and announced on signed answers,
 * with an endorsement by the current key, so clients that trust the current key learn it. It
 * signs nothing until promoted. One next key at a time.
 */
export async function prepareSigningKey(
  trx: Transaction<DB>,
  masterKey: MasterKey,
  productSlug: string,
  now = Date.now(),
): Promise<{ kid: string; endorsedBy: string }> {
  const product = await requireProduct(trx, productSlug);
  const rows = await trx
    .selectFrom("signing_keys")
    .select(["kid", "status", "private_key_iv", "private_key_ciphertext", "private_key_tag"])
    .where("product_id", "=", product.id)
    .where("status", "in", ["current", "next"])
    .execute();
  const pending = rows.find((row) => row.status === "next");
  if (pending) {
    throw new ShipkeyError(
      "SIGNING_KEY_NEXT_EXISTS",
      `Product "${productSlug}" already has a next key (${pending.kid}): promote it, or remove it to prepare another`,
    );
  }
  const current = rows.find((row) => row.status === "current");
  if (!current) throw new Error(`product ${productSlug} has no current signing key`);
  const endorser = decryptPrivateKey(masterKey, product.id, current.kid, encryptedOf(current));
  const key = generateSigningKey(masterKey, product.id);
  const endorsement = await new SignJWT({
    product: product.slug,
    key: { kty: "OKP", crv: "Ed25519", x: key.publicX, kid: key.kid },
  })
    .setProtectedHeader({ alg: "EdDSA", kid: current.kid, typ: endorsementType })
    .setIssuedAt(Math.floor(now / 1000))
    .sign(endorser);
  if ((await insertKey(trx, product.id, key, "next", now, endorsement)) === null) {
    throw rotationConflict();
  }
  keyChanges++;
  return { kid: key.kid, endorsedBy: current.kid };
}

/**
 * Step two: the next key becomes current and the current one retired, in one transaction.
 * Refused while the next key is younger than the product's offline period (an app offline since
 * before it was prepared has not learned it yet), unless forced. This process signs with it from
 * the next answer on, other running servers within their refresh window (key-ring.ts).
 */
export async function promoteSigningKey(
  trx: Transaction<DB>,
  productSlug: string,
  options: { force?: boolean; now?: number } = {},
): Promise<{ kid: string; retiredKid: string | null; forced: boolean }> {
  const now = options.now ?? Date.now();
  const product = await requireProduct(trx, productSlug);
  const next = await trx
    .selectFrom("signing_keys")
    .select(["kid", "created_at"])
    .where("product_id", "=", product.id)
    .where("status", "=", "next")
    .executeTakeFirst();
  if (!next) {
    throw new ShipkeyError(
      "NO_NEXT_SIGNING_KEY",
      `Product "${productSlug}" has no next key to promote: prepare one first`,
    );
  }
  const readyAt = next.created_at + product.offlinePeriodSeconds * 1000;
  const early = now < readyAt;
  if (early && options.force !== true) {
    throw new ShipkeyError(
      "SIGNING_KEY_TOO_NEW",
      `The next key was prepared less than the product's offline period ago: apps offline since before ${toIso(next.created_at)} have not learned it and would stop verifying answers. Promote after ${toIso(readyAt)}, or force it`,
    );
  }
  const retired = await trx
    .updateTable("signing_keys")
    .set({ status: "retired", retired_at: now })
    .where("product_id", "=", product.id)
    .where("status", "=", "current")
    .returning("kid")
    .executeTakeFirst();
  const promoted = await trx
    .updateTable("signing_keys")
    .set({ status: "current" })
    .where("kid", "=", next.kid)
    .where("status", "=", "next")
    .executeTakeFirst();
  if (promoted.numUpdatedRows === 0n) throw rotationConflict();
  keyChanges++;
  return { kid: next.kid, retiredKid: retired?.kid ?? null, forced: early };
}

/**
 * Seals every stored private key again under a new master key (`shipkey master-key rotate`, for
 * a stopped service, refused while a server's heartbeat is fresh, KEY_ROTATION_CONFLICT): the keys themselves, their kids and public halves stay, and the key-check
 * value is sealed again under `to`. All or none: a key or a key-check value that does not open
 * with `from` throws MasterKeyMismatchError, and a key added meanwhile KEY_ROTATION_CONFLICT; the
 * transaction then changes nothing.
 */
export async function resealSigningKeys(
  trx: Transaction<DB>,
  from: MasterKey,
  to: MasterKey,
): Promise<{ keys: number }> {
  // A running server keeps the old master key in memory: it could not open keys sealed later.
  await refuseWhileServersRun(trx, "shipkey master-key rotate");
  const rows = await trx
    .selectFrom("signing_keys")
    .select(["kid", "product_id", "private_key_iv", "private_key_ciphertext", "private_key_tag"])
    .execute();
  for (const row of rows) {
    const sealed = resealPrivateKey(from, to, row.product_id, row.kid, encryptedOf(row));
    await trx
      .updateTable("signing_keys")
      .set({
        private_key_iv: sealed.iv,
        private_key_ciphertext: sealed.ciphertext,
        private_key_tag: sealed.tag,
      })
      .where("kid", "=", row.kid)
      .execute();
  }
  // A key another process added meanwhile would stay under the old master key.
  const { count } = await trx
    .selectFrom("signing_keys")
    .select((eb) => eb.fn.countAll<number>().as("count"))
    .executeTakeFirstOrThrow();
  if (Number(count) !== rows.length) {
    throw new ShipkeyError(
      "KEY_ROTATION_CONFLICT",
      "A signing key was added during the master key rotation: stop every process, then run it again",
    );
  }
  const check = await readKeyCheck(trx);
  if (check !== null && !opensKeyCheck(from, check)) throw keyCheckMismatch();
  await replaceKeyCheck(trx, to);
  return { keys: rows.length };
}

/** Removes a retired key: answers signed with it no longer verify for clients using the JWKS. */
export async function removeSigningKey(
  trx: Transaction<DB>,
  productSlug: string,
  kid: string,
): Promise<{ kid: string }> {
  const product = await requireProduct(trx, productSlug);
  const row = await trx
    .selectFrom("signing_keys")
    .select("status")
    .where("product_id", "=", product.id)
    .where("kid", "=", kid)
    .executeTakeFirst();
  if (!row)
    throw new ShipkeyError("SIGNING_KEY_NOT_FOUND", `Product "${productSlug}" has no key "${kid}"`);
  if (row.status === "current") {
    throw new ShipkeyError(
      "SIGNING_KEY_CURRENT",
      "The current signing key cannot be removed: prepare a next key and promote it first",
    );
  }
  await trx.deleteFrom("signing_keys").where("kid", "=", kid).execute();
  keyChanges++;
  return { kid };
}
