import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { type MasterKey, MasterKeyMismatchError } from "./key-material.js";

/**
 * The key-check value stored with the database (table master_key_check, one row, id 1): a fixed
 * plaintext sealed with AES-256-GCM under the master key, with associated data of its own, so no
 * signing key's ciphertext can stand in for it. Stored as `v1.<iv>.<ciphertext>.<tag>` (base64).
 * A master key that opens it is the one the database's signing keys are sealed under; one that
 * does not is refused before it seals anything.
 */
const checkRowId = 1;
const checkPlaintext = Buffer.from("shipkey master key check");
const checkAssociatedData = Buffer.from("shipkey-master-key-check:v1");

export function sealKeyCheck(masterKey: MasterKey): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", masterKey, iv);
  cipher.setAAD(checkAssociatedData);
  const ciphertext = Buffer.concat([cipher.update(checkPlaintext), cipher.final()]);
  return ["v1", iv, ciphertext, cipher.getAuthTag()]
    .map((part) => (typeof part === "string" ? part : part.toString("base64")))
    .join(".");
}

/** Whether this master key sealed the stored value. */
export function opensKeyCheck(masterKey: MasterKey, value: string): boolean {
  const [version, iv, ciphertext, tag] = value.split(".");
  if (version !== "v1" || iv === undefined || ciphertext === undefined || tag === undefined) {
    return false;
  }
  try {
    const decipher = createDecipheriv("aes-256-gcm", masterKey, Buffer.from(iv, "base64"), {
      authTagLength: 16,
    });
    decipher.setAAD(checkAssociatedData);
    decipher.setAuthTag(Buffer.from(tag, "base64"));
    const plaintext = Buffer.concat([
      decipher.update(Buffer.from(ciphertext, "base64")),
      decipher.final(),
    ]);
    return plaintext.equals(checkPlaintext);
  } catch {
    return false;
  }
}

export const keyCheckMismatch = () =>
  new MasterKeyMismatchError(
    "the master key does not decrypt this database's key-check value: it is not the master key this database's signing keys are sealed under",
  );

/** The stored key-check value; null on a database that has none yet. */
export async function readKeyCheck(db: Kysely<DB>): Promise<string | null> {
  const row = await db
    .selectFrom("master_key_check")
    .select("value")
    .where("id", "=", checkRowId)
    .executeTakeFirst();
  return row?.value ?? null;
}

/**
 * Stores the key-check value unless one exists (processes racing on a new database: the first
 * insert wins, the others do nothing), then verifies the stored one: MasterKeyMismatchError when
 * another master key's value won.
 */
export async function writeKeyCheckOnce(
  db: Kysely<DB>,
  masterKey: MasterKey,
  now = Date.now(),
): Promise<void> {
  await db
    .insertInto("master_key_check")
    .values({ id: checkRowId, value: sealKeyCheck(masterKey), created_at: now })
    .onConflict((oc) => oc.column("id").doNothing())
    .execute();
  const stored = await readKeyCheck(db);
  if (stored === null || !opensKeyCheck(masterKey, stored)) throw keyCheckMismatch();
}

/** The key-check value sealed again under a new master key (in the rotation's transaction). */
export async function replaceKeyCheck(
  db: Kysely<DB>,
  masterKey: MasterKey,
  now = Date.now(),
): Promise<void> {
  const value = sealKeyCheck(masterKey);
  await db
    .insertInto("master_key_check")
    .values({ id: checkRowId, value, created_at: now })
    .onConflict((oc) => oc.column("id").doUpdateSet({ value, created_at: now }))
    .execute();
}
