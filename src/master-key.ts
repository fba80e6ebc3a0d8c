import { randomBytes } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  linkSync,
  readFileSync,
  rmSync,
  writeFileSync,
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

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));
