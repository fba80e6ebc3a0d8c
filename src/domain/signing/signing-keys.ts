import { type Kysely, sql, type Transaction } from "kysely";
import type { DB, SigningKeyStatus } from "../../db/schema.js";
import { inTransaction } from "../../db/transaction.js";
import { ShipkeyError } from "../../errors.js";
import { toIso } from "../../lib/time.js";
import { requireProduct } from "../products/products.js";
import {
  decryptPrivateKey,
  generateSigningKey,
  type MasterKey,
  publicJwk,
  type PublicJwk,
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

/** A signing key as admins see it: never the private half. */
export interface SigningKeyView {
  kid: string;
  status: SigningKeyStatus;
  createdAt: string;
  retiredAt: string | null;
  jwk: PublicJwk;
  pem: string;
}

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

async function insertCurrentKey(
  db: Kysely<DB>,
  masterKey: MasterKey,
  productId: string,
  now: number,
): Promise<string | null> {
  const key = generateSigningKey(masterKey, productId);
  const inserted = await db
    .insertInto("signing_keys")
    .values({
      kid: key.kid,
      product_id: productId,
      public_x: key.publicX,
      private_key_iv: key.encrypted.iv,
      private_key_ciphertext: key.encrypted.ciphertext,
      private_key_tag: key.encrypted.tag,
      status: "current",
      created_at: now,
      retired_at: null,
    })
    // The conflict target names the partial index; its predicate must be the index's literal.
    .onConflict((oc) =>
      oc.column("product_id").where("status", "=", sql.lit("current")).doNothing(),
    )
    .returning("kid")
    .executeTakeFirst();
  return inserted?.kid ?? null;
}

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

/** The product's public keys, current first, then retired ones newest first. */
export async function listProductKeys(
  db: Kysely<DB>,
  productSlug: string,
): Promise<SigningKeyView[]> {
  const product = await requireProduct(db, productSlug);
  const rows = await db
    .selectFrom("signing_keys")
    .select(["kid", "public_x", "status", "created_at", "retired_at"])
    .where("product_id", "=", product.id)
    .orderBy("created_at", "desc")
    .orderBy("kid")
    .execute();
  return rows
    .sort((a, b) => Number(a.status !== "current") - Number(b.status !== "current"))
    .map((row) => ({
      kid: row.kid,
      status: row.status,
      createdAt: toIso(row.created_at),
      retiredAt: row.retired_at === null ? null : toIso(row.retired_at),
      jwk: publicJwk(row.kid, row.public_x),
      pem: publicPem(row.public_x),
    }));
}

/** The public JWKS of a product: `{keys: [current, ...retired]}`. */
export async function productJwks(
  db: Kysely<DB>,
  productSlug: string,
): Promise<{ keys: PublicJwk[] }> {
  return { keys: (await listProductKeys(db, productSlug)).map((key) => key.jwk) };
}

/**
 * Makes a new current key and retires the old one, in one transaction. Running servers sign
 * with the new key within their refresh window (key-ring.ts); the old key stays published.
 */
export async function rotateSigningKey(
  db: Kysely<DB>,
  masterKey: MasterKey,
  productSlug: string,
  now = Date.now(),
): Promise<{ kid: string; retiredKid: string | null }> {
  return inTransaction(db, async (trx) => {
    const product = await requireProduct(trx, productSlug);
    const retired = await trx
      .updateTable("signing_keys")
      .set({ status: "retired", retired_at: now })
      .where("product_id", "=", product.id)
      .where("status", "=", "current")
      .returning("kid")
      .executeTakeFirst();
    const kid = await insertCurrentKey(trx, masterKey, product.id, now);
    // Another rotation committed its new key between our update and insert.
    if (kid === null)
      throw new ShipkeyError(
        "KEY_ROTATION_CONFLICT",
        "Another key rotation is under way; try again",
      );
    return { kid, retiredKid: retired?.kid ?? null };
  });
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
      "The current signing key cannot be removed; rotate first",
    );
  }
  await trx.deleteFrom("signing_keys").where("kid", "=", kid).execute();
  return { kid };
}

/** The slug of the product a license key belongs to; null for an unknown key. */
export async function productSlugOfLicenseKey(
  db: Kysely<DB>,
  licenseKey: string,
): Promise<string | null> {
  const row = await db
    .selectFrom("licenses")
    .innerJoin("products", "products.id", "licenses.product_id")
    .select("products.slug")
    .where("licenses.license_key", "=", licenseKey)
    .executeTakeFirst();
  return row?.slug ?? null;
}
