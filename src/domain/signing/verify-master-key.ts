import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import type { MasterKey } from "./key-material.js";
import {
  keyCheckMismatch,
  opensKeyCheck,
  readKeyCheck,
  writeKeyCheckOnce,
} from "./master-key-check.js";
import { assertMasterKeyOpensKeys } from "./signing-keys.js";

/**
 * Proves that `masterKey` is this database's before anything is sealed under it (every server
 * start; every CLI command that seals a key). It must open every stored signing key (the error
 * names the first kid that does not open) and the stored key-check value. A database without a
 * check value (new, or upgraded) gets one, written only once every stored key has opened.
 * Throws MasterKeyMismatchError.
 */
export async function verifyMasterKey(db: Kysely<DB>, masterKey: MasterKey): Promise<void> {
  await assertMasterKeyOpensKeys(db, masterKey);
  const stored = await readKeyCheck(db);
  if (stored === null) await writeKeyCheckOnce(db, masterKey);
  else if (!opensKeyCheck(masterKey, stored)) throw keyCheckMismatch();
}

/**
 * Whether the database already depends on a master key: it holds a sealed signing key or a
 * key-check value. A SQLite database that does must not be given a new key file.
 */
export async function holdsSealedKeys(
  db: Kysely<DB>,
): Promise<{ signingKeys: boolean; keyCheck: boolean }> {
  const key = await db.selectFrom("signing_keys").select("kid").limit(1).executeTakeFirst();
  return { signingKeys: key !== undefined, keyCheck: (await readKeyCheck(db)) !== null };
}
