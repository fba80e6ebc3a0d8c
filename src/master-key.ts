import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { dirname } from "node:path";
import type { Kysely } from "kysely";
import { ConfigError, masterKeyFormat, masterKeyFromText } from "./config.js";
import { parseDatabaseUrl } from "./db/database.js";
import type { DB } from "./db/schema.js";
import {
  type MasterKey,
  masterKeyBytes,
  MasterKeyMismatchError,
} from "./domain/signing/key-material.js";
import { refuseWhileServersRun } from "./domain/maintenance/service-processes.js";
import { holdsSealedKeys, verifyMasterKey } from "./domain/signing/verify-master-key.js";

/** Where SQLite keeps a generated master key: beside the database file. */
export const masterKeyFileOf = (sqlitePath: string) => `${sqlitePath}.master-key`;

/** A master key and where it came from, for messages ("SHIPKEY_MASTER_KEY", "the key file …"). */
export interface ResolvedMasterKey {
  key: MasterKey;
  source: string;
  /** The key file this process just created (to be backed up with the database), else null. */
  createdFile: string | null;
}

/**
 * What can be known before the database is opened: PostgreSQL needs SHIPKEY_MASTER_KEY, because
 * every process must share one key. The server checks this before waiting for the database.
 */
export function assertMasterKeyConfigured(fromEnv: MasterKey | null, databaseUrl: string): void {
  if (fromEnv === null && parseDatabaseUrl(databaseUrl).dialect === "postgres") {
    throw postgresNeedsKey();
  }
}

const postgresNeedsKey = () =>
  new ConfigError(
    `SHIPKEY_MASTER_KEY is required with PostgreSQL (every process must share one key): set it to ${masterKeyFormat}`,
  );

/**
 * The master key that encrypts the signing keys: SHIPKEY_MASTER_KEY when set; otherwise, on
 * SQLite, the key in `<database>.master-key` (0600). The key file is created, with a random key,
 * only for a database that holds no sealed signing key and no key-check value: a database that
 * does (a backup restored without its key file) stops here, and no new key file is written.
 * PostgreSQL without SHIPKEY_MASTER_KEY refuses. `db` is the opened, migrated database.
 */
export async function resolveMasterKey(
  fromEnv: MasterKey | null,
  databaseUrl: string,
  db: Kysely<DB>,
): Promise<ResolvedMasterKey> {
  if (fromEnv) return { key: fromEnv, source: "SHIPKEY_MASTER_KEY", createdFile: null };
  const target = parseDatabaseUrl(databaseUrl);
  if (target.dialect === "postgres") throw postgresNeedsKey();
  if (target.path === ":memory:") {
    return {
      key: randomBytes(masterKeyBytes),
      source: "this in-memory database's key",
      createdFile: null,
    };
  }
  const file = masterKeyFileOf(target.path);
  let created = false;
  if (!existsSync(file)) {
    const held = await holdsSealedKeys(db);
    // Looked at again: a process starting beside this one may have just created the file and
    // sealed keys under it.
    if ((held.signingKeys || held.keyCheck) && !existsSync(file)) {
      throw new ConfigError(
        `the database holds ${held.signingKeys ? "signing keys sealed under a master key" : "the key-check value of a master key"}, but the key file ${file} is missing: restore it beside the database, or set SHIPKEY_MASTER_KEY to that key (no new key file was written)`,
      );
    }
    created = createKeyFile(file);
  }
  let text: string;
  try {
    text = readFileSync(file, "utf8");
    chmodSync(file, 0o600);
  } catch (err) {
    throw new ConfigError(`cannot read the master key file ${file}: ${messageOf(err)}`);
  }
  return {
    key: masterKeyFromText(text, `the master key file ${file}`),
    source: `the key file ${file}`,
    createdFile: created ? file : null,
  };
}

/**
 * The master key, proven to be this database's (verifyMasterKey: it opens every stored signing
 * key and the key-check value, written now if the database has none). Anything that seals a
 * key asks for it this way; a wrong key is a ConfigError naming where it came from.
 */
export async function resolveVerifiedMasterKey(
  fromEnv: MasterKey | null,
  databaseUrl: string,
  db: Kysely<DB>,
): Promise<ResolvedMasterKey> {
  const resolved = await resolveMasterKey(fromEnv, databaseUrl, db);
  await verifyResolved(db, resolved);
  return resolved;
}

async function verifyResolved(db: Kysely<DB>, resolved: ResolvedMasterKey): Promise<void> {
  try {
    await verifyMasterKey(db, resolved.key);
  } catch (err) {
    if (err instanceof MasterKeyMismatchError) {
      throw new ConfigError(`${err.message} (the master key in use: ${resolved.source})`);
    }
    throw err;
  }
}

/**
 * Written whole to a private temporary file, then linked into place: link() fails when the file
 * exists, so of processes creating it together one does, and all read the same key. True when
 * this process created it.
 */
function createKeyFile(file: string): boolean {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, `${randomBytes(masterKeyBytes).toString("base64")}\n`, {
      flag: "wx",
      mode: 0o600,
    });
    linkSync(temporary, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") {
      throw new ConfigError(`cannot create the master key file ${file}: ${messageOf(err)}`);
    }
    return false;
  } finally {
    rmSync(temporary, { force: true });
  }
}

/** What a rotation sealed again: signing keys, webhook endpoints' and integrations' secrets. */
export interface Resealed {
  keys: number;
  webhookSecrets: number;
  integrationSecrets: number;
}

/**
 * `shipkey master-key rotate`, for a stopped service: it refuses while a server's heartbeat is
 * fresh, and while the current master key is not this database's (resolveVerifiedMasterKey).
 * `reseal` seals every signing key, webhook and integration secret and the key-check value under a new master key. With SHIPKEY_MASTER_KEY set, the new key is SHIPKEY_NEW_MASTER_KEY's, and the
 * operator then sets it on every process. On SQLite without it, the key file is replaced: the
 * new key (SHIPKEY_NEW_MASTER_KEY if given, else random) is written durably to `<file>.new`, the
 * keys are sealed, then the old key is kept as `<file>.old` and the new one moved into place.
 */
export async function rotateMasterKey(
  db: Kysely<DB>,
  fromEnv: MasterKey | null,
  newKeyText: string | undefined,
  databaseUrl: string,
  reseal: (from: MasterKey, to: MasterKey) => Promise<Resealed>,
): Promise<Resealed & { file: string | null; previous: string | null }> {
  const target = parseDatabaseUrl(databaseUrl);
  if (target.dialect === "sqlite" && target.path === ":memory:") {
    throw new ConfigError("an in-memory database has no master key to rotate");
  }
  const given = newKeyText ? masterKeyFromText(newKeyText, "SHIPKEY_NEW_MASTER_KEY") : null;
  await refuseWhileServersRun(db, "shipkey master-key rotate");
  const { key: from } = await resolveVerifiedMasterKey(fromEnv, databaseUrl, db);
  const file =
    fromEnv === null && target.dialect === "sqlite" ? masterKeyFileOf(target.path) : null;
  if (file === null && given === null) {
    throw new ConfigError(`set SHIPKEY_NEW_MASTER_KEY to the new master key: ${masterKeyFormat}`);
  }
  const to = given ?? randomBytes(masterKeyBytes);
  if (to.equals(from)) throw new ConfigError("SHIPKEY_NEW_MASTER_KEY is the current master key");
  if (file === null) return { ...(await reseal(from, to)), file: null, previous: null };

  const next = `${file}.new`;
  const previous = `${file}.old`;
  if (existsSync(next)) {
    throw new ConfigError(
      `${next} exists: an earlier rotation stopped half-way. If the service starts with ${file}, delete ${next}; if it stops with "does not decrypt", move ${next} over ${file}`,
    );
  }
  writeDurably(next, `${to.toString("base64")}\n`);
  let result: Resealed;
  try {
    result = await reseal(from, to);
  } catch (err) {
    rmSync(next, { force: true });
    throw err;
  }
  try {
    // The old key stays beside the new one (should the last commit be lost to a power cut), and
    // the key file is never missing: a hard link first, then an atomic rename over it.
    rmSync(previous, { force: true });
    linkSync(file, previous);
    renameSync(next, file);
    syncDirectory(dirname(file));
  } catch (err) {
    throw new ConfigError(
      `the signing keys are sealed under the new master key in ${next}, but ${file} could not be replaced (${messageOf(err)}): move ${next} over it before starting the service`,
    );
  }
  return { ...result, file, previous };
}

function writeDurably(path: string, text: string): void {
  const fd = openSync(path, "wx", 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  syncDirectory(dirname(path));
}

function syncDirectory(path: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    fsyncSync(fd);
  } catch {
    // Not every platform can sync a directory (Windows); the file's own data is synced.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));
