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
import { parseDatabaseUrl } from "./db/database.js";
import { ConfigError, masterKeyFormat } from "./config.js";
import { type MasterKey, masterKeyBytes, parseMasterKey } from "./domain/signing/key-material.js";

/** Where SQLite keeps a generated master key: beside the database file. */
export const masterKeyFileOf = (sqlitePath: string) => `${sqlitePath}.master-key`;

/**
 * The master key that encrypts the signing keys: SHIPKEY_MASTER_KEY when set; otherwise, on
 * SQLite, the key in `<database>.master-key` (0600), created with a random key on first use;
 * PostgreSQL refuses, because every process must share one key.
 */
export function resolveMasterKey(fromEnv: MasterKey | null, databaseUrl: string): MasterKey {
  if (fromEnv) return fromEnv;
  const target = parseDatabaseUrl(databaseUrl);
  if (target.dialect === "postgres") {
    throw new ConfigError(
      `SHIPKEY_MASTER_KEY is required with PostgreSQL (every process must share one key): set it to ${masterKeyFormat}`,
    );
  }
  if (target.path === ":memory:") return randomBytes(masterKeyBytes);
  const file = masterKeyFileOf(target.path);
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    // Written whole to a private temporary file, then linked into place: link() fails when the
    // file exists, so of processes starting together one creates it and all read the same key.
    const temporary = `${file}.${process.pid}.tmp`;
    try {
      writeFileSync(temporary, `${randomBytes(masterKeyBytes).toString("base64")}\n`, {
        flag: "wx",
        mode: 0o600,
      });
      linkSync(temporary, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") {
        throw new ConfigError(`cannot create the master key file ${file}: ${messageOf(err)}`);
      }
    } finally {
      rmSync(temporary, { force: true });
    }
  }
  let text: string;
  try {
    text = readFileSync(file, "utf8");
    chmodSync(file, 0o600);
  } catch (err) {
    throw new ConfigError(`cannot read the master key file ${file}: ${messageOf(err)}`);
  }
  const key = parseMasterKey(text);
  if (!key) throw new ConfigError(`the master key file ${file} must hold ${masterKeyFormat}`);
  return key;
}

/**
 * `shipkey master-key rotate`, for a stopped service: `reseal` seals every signing key under a
 * new master key. With SHIPKEY_MASTER_KEY set, the new key is SHIPKEY_NEW_MASTER_KEY's, and the
 * operator then sets it on every process. On SQLite without it, the key file is replaced: the
 * new key (SHIPKEY_NEW_MASTER_KEY if given, else random) is written durably to `<file>.new`, the
 * keys are sealed, then the old key is kept as `<file>.old` and the new one moved into place.
 */
export async function rotateMasterKey(
  fromEnv: MasterKey | null,
  newKeyText: string | undefined,
  databaseUrl: string,
  reseal: (from: MasterKey, to: MasterKey) => Promise<{ keys: number }>,
): Promise<{ keys: number; file: string | null; previous: string | null }> {
  const target = parseDatabaseUrl(databaseUrl);
  if (target.dialect === "sqlite" && target.path === ":memory:") {
    throw new ConfigError("an in-memory database has no master key to rotate");
  }
  const from = resolveMasterKey(fromEnv, databaseUrl);
  const given = newKeyText ? parseMasterKey(newKeyText) : null;
  if (newKeyText && !given) {
    throw new ConfigError(`SHIPKEY_NEW_MASTER_KEY must be ${masterKeyFormat}`);
  }
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
  let result: { keys: number };
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
