import { randomBytes } from "node:crypto";
import os from "node:os";
import { type CommandResult, escapeControlCharacters } from "@shipkey/publish";
import type { Kysely } from "kysely";
import { activationHistoryMsFrom, databaseUrlFrom, masterKeyFromEnv } from "../config.js";
import type { MasterKey } from "../domain/signing/key-material.js";
import { listProductKeys } from "../domain/signing/signing-keys.js";
import { resolveVerifiedMasterKey, rotateMasterKey } from "../master-key.js";
import type { DB } from "../db/schema.js";
import { listAdmins } from "../domain/admins/admins.js";
import { listApiKeys } from "../domain/api-keys/api-keys.js";
import type { Actor } from "../domain/audit/audit-log.js";
import {
  createAdminAudited,
  createApiKeyAudited,
  createLicenseAudited,
  createProductAudited,
  removeAdminAudited,
  resetAdminPasswordAudited,
  removeSigningKeyAudited,
  revokeApiKeyAudited,
  rotateMasterKeyAudited,
  prepareSigningKeyAudited,
  promoteSigningKeyAudited,
  setDeactivationLimitAudited,
  setOfflineAllowanceAudited,
  setOfflinePeriodAudited,
  setReleaseYankedAudited,
  updateLicenseAudited,
  updateProductAudited,
} from "../domain/audit/audited-actions.js";
import { type LicenseView, showLicense } from "../domain/licenses/manage-licenses.js";
import { prune } from "../domain/maintenance/prune.js";
import { listProducts } from "../domain/products/products.js";
import {
  expiryOption,
  integerOption,
  listOption,
  type Options,
  requiredOption,
  statusOption,
  stringOption,
  switchOption,
  UsageError,
} from "./args.js";

export type { CommandResult };

interface Command {
  run(db: Kysely<DB>, args: string[], options: Options): Promise<CommandResult>;
}

export const usage = `Usage: shipkey <command> [options] [--json]

  migrate
  prune   (deletes what the server prunes hourly; honours ACTIVATION_HISTORY_DAYS)
  products create --slug <slug> --name <name>
  products list
  products update <slug> [--name <name>] [--tauri-public-key <key>|none]
                  [--updates-require-license on|off] [--download-redirects on|off]
      (the key from tauri.conf.json; while set, publish refuses signatures not made by it)
  products keys <slug>   (public keys: current, next, then retired ones)
  products prepare-key <slug>   (a next key, endorsed by the current one; signs nothing yet)
  products promote-key <slug> [--force]   (the next key signs within 30 s; the current one
      retires; --force before the product's offline period has passed since prepare)
  products remove-key <slug> --kid <kid>   (a next or retired key only)
  products set-offline-period <slug> --seconds <n>   (certificate lifetime, 60 s to 90 days)
  products set-offline-allowance <slug> --machines <n>
      (machines beyond a license's max-machines that may hold an unexpired certificate; 0 to 100)
  products set-deactivation-limit <slug> --per-30-days <n>|none
      (public deactivations allowed per license in 30 days; none: no limit, the default)
  master-key rotate   (stop every server first, else refused; seals every signing key under SHIPKEY_NEW_MASTER_KEY,
      or on SQLite without SHIPKEY_MASTER_KEY under a new key (given, else random) in the key file)
  licenses create --product <slug> --max-machines <n> [--key <key>]
      [--status ACTIVE|SUSPENDED|REVOKED] [--expires-at <iso>] [--edition <e>]
      [--edition-name <n>] [--features a,b,c] [--customer-name <n>] [--customer-email <e>]
      [--note <text>] [--external-id <id>] [--max-deactivations-per-30-days <n>|product]
  licenses update <licenseKey> [--status ...] [--expires-at <iso>|never]
      [--max-machines <n>] [--edition <e>] [--edition-name <n>] [--features a,b,c]
      [--customer-name <n>] [--customer-email <e>] [--note <text>] [--external-id <id>]
      [--max-deactivations-per-30-days <n>|product]   (product: the product's limit applies)
  licenses show <licenseKey>
  admins create --email <email> [--password-stdin]   (generates a password unless given)
  admins list
  admins reset-password --email <email> [--password-stdin]   (ends the admin's sessions)
  admins remove --email <email>   (ends the admin's sessions; never the last admin)
  api-keys create --name <name> --scopes <s1,s2> [--expires-at <iso>] [--products <slug1,slug2>]
  api-keys list
  api-keys revoke <id>
  releases yank --product <slug> --version <v>   (every update feed skips it from now on)
  releases unyank --product <slug> --version <v>
  publish --server <url> --product <slug> --version <v> --channel STABLE|BETA|ALPHA
      --base-url <https url> [--notes-file <path>] [--platform WINDOWS|MACOS|LINUX]
      [--arch X64|ARM64] [--timeout <seconds>] [--dry-run] <file>...
      (over HTTP, with the API key in SHIPKEY_API_KEY; no database)

The database is DATABASE_URL (default sqlite:./data/shipkey.db); it is created and migrated
if needed. --json prints exactly one JSON document on stdout.
`;

/**
 * Who the audit log names for a CLI write: the operating-system user and host that ran it (the
 * CLI needs direct access to the database, so this is as far as it can know).
 */
export function cliActor(): Actor {
  let user = "unknown";
  try {
    user = os.userInfo().username;
  } catch {
    // no passwd entry for this uid (some containers): keep "unknown"
  }
  return { type: "cli", id: null, label: `${user}@${os.hostname()}`, ip: null };
}

/**
 * The master key the server uses (SHIPKEY_MASTER_KEY, or SQLite's key file beside the database),
 * verified against the database before the command seals anything under it: a wrong key stops
 * the command with nothing changed.
 */
async function cliMasterKey(db: Kysely<DB>): Promise<MasterKey> {
  const { key, createdFile } = await resolveVerifiedMasterKey(
    masterKeyFromEnv(),
    databaseUrlFrom(),
    db,
  );
  if (createdFile) {
    process.stderr.write(
      `shipkey: created the master key file ${createdFile}: back it up with the database\n`,
    );
  }
  return key;
}

/** The master key when this environment has one; else null (the server makes the key later). */
async function masterKeyIfAvailable(db: Kysely<DB>): Promise<MasterKey | null> {
  if (masterKeyFromEnv() === null && databaseUrlFrom().startsWith("postgres")) return null;
  return cliMasterKey(db);
}

function oneArgument(args: string[], what: string): string {
  const [value, ...extra] = args;
  if (value === undefined || extra.length > 0) throw new UsageError(`expected exactly one ${what}`);
  return value;
}

function noArguments(args: string[]): void {
  if (args.length > 0) throw new UsageError(`unexpected argument "${args[0]}"`);
}

/**
 * Human output: aligned `key  value` lines. Control characters in a value (an escape sequence
 * stored by hand or by an older version, a line break in a note) are printed escaped (`\x1b`,
 * `\n`), so a value can neither drive the terminal nor break the layout.
 */
function describe(record: Record<string, unknown>): string {
  const width = Math.max(...Object.keys(record).map((k) => k.length));
  return Object.entries(record)
    .map(([key, value]) => {
      const shown = Array.isArray(value) ? value.join(", ") : value === null ? "-" : String(value);
      return `${key.padEnd(width)}  ${escapeControlCharacters(shown)}`;
    })
    .join("\n");
}

/** An API key for the human output: a key for every product says "all". */
function keyRecord(key: { products: string[] | null }): Record<string, unknown> {
  return { ...key, products: key.products ?? "all" };
}

function table(rows: Array<Record<string, unknown>>, empty: string): string {
  if (rows.length === 0) return empty;
  return rows.map((row) => describe(row)).join("\n\n");
}

function licenseSettings(options: Options, allowNever: boolean) {
  return {
    status: statusOption(options),
    expiresAt: expiryOption(options, allowNever),
    edition: stringOption(options, "edition"),
    editionName: stringOption(options, "edition-name"),
    features: listOption(options, "features"),
    maxMachines: integerOption(options, "max-machines"),
    customerName: stringOption(options, "customer-name"),
    customerEmail: stringOption(options, "customer-email"),
    note: stringOption(options, "note"),
    externalId: stringOption(options, "external-id"),
    maxDeactivationsPer30Days: limitOption(options, "max-deactivations-per-30-days", "product"),
  };
}

/** A churn limit: a whole number, or the word that means null (`none`, `product`). */
function limitOption(options: Options, name: string, nullWord: string): number | null | undefined {
  if (stringOption(options, name) === nullWord) return null;
  return integerOption(options, name);
}

function licenseText(license: LicenseView): string {
  return describe({ ...license });
}

export const commands: Record<string, Command> = {
  migrate: {
    // main() migrates before any command runs; this one only reports it.
    run: async (_db, args) => {
      noArguments(args);
      return { data: { migrated: true }, text: "Database is up to date." };
    },
  },
  "products create": {
    run: async (db, args, options) => {
      noArguments(args);
      const product = await createProductAudited(
        db,
        cliActor(),
        { slug: requiredOption(options, "slug"), name: requiredOption(options, "name") },
        await masterKeyIfAvailable(db),
      );
      return { data: product, text: describe({ ...product }) };
    },
  },
  "products keys": {
    run: async (db, args) => {
      const keys = await listProductKeys(db, oneArgument(args, "product slug"));
      return {
        data: keys,
        text: table(
          keys.map((k) => ({
            kid: k.kid,
            status: k.status,
            createdAt: k.createdAt,
            retiredAt: k.retiredAt,
            jwk: JSON.stringify(k.jwk),
          })),
          "No signing key yet.",
        ),
      };
    },
  },
  "products prepare-key": {
    run: async (db, args) => {
      const slug = oneArgument(args, "product slug");
      // A key sealed under another master key would leave the servers unable to sign.
      const masterKey = await cliMasterKey(db);
      const prepared = await prepareSigningKeyAudited(db, cliActor(), masterKey, slug);
      return {
        data: prepared,
        text: `${describe({ ...prepared })}\nPublished as the next key; apps learn it from their next signed answer. Promote it after the product's offline period.`,
      };
    },
  },
  "products promote-key": {
    run: async (db, args, options) => {
      const slug = oneArgument(args, "product slug");
      const promotion = await promoteSigningKeyAudited(db, cliActor(), slug, {
        force: options.force === true,
      });
      return {
        data: promotion,
        text: `${describe({ ...promotion })}\nRunning servers sign with it within 30 seconds.`,
      };
    },
  },
  "master-key rotate": {
    run: async (db, args) => {
      noArguments(args);
      const rotation = await rotateMasterKey(
        db,
        masterKeyFromEnv(),
        process.env.SHIPKEY_NEW_MASTER_KEY,
        databaseUrlFrom(),
        (from, to) => rotateMasterKeyAudited(db, cliActor(), from, to),
      );
      return {
        data: rotation,
        text:
          rotation.file === null
            ? `${rotation.keys} signing keys sealed under SHIPKEY_NEW_MASTER_KEY. Set SHIPKEY_MASTER_KEY to it for every process, then start them.`
            : `${rotation.keys} signing keys sealed under a new master key, now in ${rotation.file}. Back it up, then start the service; once it runs, delete the old key, kept in ${rotation.previous}.`,
      };
    },
  },
  "products remove-key": {
    run: async (db, args, options) => {
      const slug = oneArgument(args, "product slug");
      const removed = await removeSigningKeyAudited(
        db,
        cliActor(),
        slug,
        requiredOption(options, "kid"),
      );
      return { data: { deleted: true, ...removed }, text: `Removed key ${removed.kid}.` };
    },
  },
  "products set-offline-period": {
    run: async (db, args, options) => {
      const slug = oneArgument(args, "product slug");
      const seconds = integerOption(options, "seconds");
      if (seconds === undefined) throw new UsageError("--seconds is required");
      const product = await setOfflinePeriodAudited(db, cliActor(), slug, seconds);
      return { data: product, text: describe({ ...product }) };
    },
  },
  "products set-offline-allowance": {
    run: async (db, args, options) => {
      const slug = oneArgument(args, "product slug");
      const machines = integerOption(options, "machines");
      if (machines === undefined) throw new UsageError("--machines is required");
      const product = await setOfflineAllowanceAudited(db, cliActor(), slug, machines);
      return { data: product, text: describe({ ...product }) };
    },
  },
  "products set-deactivation-limit": {
    run: async (db, args, options) => {
      const slug = oneArgument(args, "product slug");
      const limit = limitOption(options, "per-30-days", "none");
      if (limit === undefined) throw new UsageError("--per-30-days is required (a number or none)");
      const product = await setDeactivationLimitAudited(db, cliActor(), slug, limit);
      return { data: product, text: describe({ ...product }) };
    },
  },
  "products update": {
    run: async (db, args, options) => {
      const slug = oneArgument(args, "product slug");
      const name = stringOption(options, "name");
      const key = stringOption(options, "tauri-public-key");
      const updatesRequireLicense = switchOption(options, "updates-require-license");
      const downloadRedirects = switchOption(options, "download-redirects");
      if ([name, key, updatesRequireLicense, downloadRedirects].every((v) => v === undefined)) {
        throw new UsageError(
          "products update needs --name, --tauri-public-key, --updates-require-license or --download-redirects",
        );
      }
      const product = await updateProductAudited(db, cliActor(), slug, {
        name,
        tauriPublicKey: key === "none" ? null : key,
        updatesRequireLicense,
        downloadRedirects,
      });
      return { data: product, text: describe({ ...product }) };
    },
  },
  "products list": {
    run: async (db, args) => {
      noArguments(args);
      const products = await listProducts(db);
      return {
        data: products,
        text: table(
          products.map((p) => ({ ...p })),
          "No products yet.",
        ),
      };
    },
  },
  prune: {
    run: async (db, args) => {
      noArguments(args);
      const counts = await prune(db, { activationHistoryMs: activationHistoryMsFrom() });
      return {
        data: counts,
        text: `Deleted ${counts.activations} ended activations, ${counts.sessions} expired sessions, ${counts.idempotencyKeys} idempotency keys and ${counts.certificates} expired certificate records.`,
      };
    },
  },
  "licenses create": {
    run: async (db, args, options) => {
      noArguments(args);
      const settings = licenseSettings(options, false);
      const maxMachines = settings.maxMachines;
      if (maxMachines === undefined) throw new UsageError("--max-machines is required");
      const license = await createLicenseAudited(db, cliActor(), {
        ...settings,
        productSlug: requiredOption(options, "product"),
        maxMachines,
        licenseKey: stringOption(options, "key"),
      });
      return { data: license, text: licenseText(license) };
    },
  },
  "licenses update": {
    run: async (db, args, options) => {
      const licenseKey = oneArgument(args, "license key");
      const license = await updateLicenseAudited(
        db,
        cliActor(),
        licenseKey,
        licenseSettings(options, true),
      );
      return { data: license, text: licenseText(license) };
    },
  },
  "licenses show": {
    run: async (db, args) => {
      const license = await showLicense(db, oneArgument(args, "license key"));
      const { machines, ...rest } = license;
      const machineText = table(
        machines.map((m) => ({ ...m })),
        "No active machines.",
      );
      return { data: license, text: `${licenseText(rest)}\n\nActive machines:\n${machineText}` };
    },
  },
  "api-keys create": {
    run: async (db, args, options) => {
      noArguments(args);
      const scopes = listOption(options, "scopes");
      if (scopes === undefined) throw new UsageError("--scopes is required");
      const created = await createApiKeyAudited(db, cliActor(), {
        name: requiredOption(options, "name"),
        scopes,
        expiresAt: expiryOption(options, false) ?? null,
        products: listOption(options, "products") ?? null,
      });
      return {
        data: created,
        text: `${describe(keyRecord(created))}\n\nStore the key now: it is shown only once.`,
      };
    },
  },
  "admins create": {
    run: async (db, args, options) => {
      noArguments(args);
      const email = requiredOption(options, "email");
      const { password, generated } = await passwordFrom(options);
      const admin = await createAdminAudited(db, cliActor(), { email, password });
      return {
        data: { ...admin, ...(generated ? { password } : {}) },
        text: `${describe({ ...admin })}${generated ? `\n\nPassword (shown once): ${password}` : ""}\n\nSign in at /admin.`,
      };
    },
  },
  "admins list": {
    run: async (db, args) => {
      noArguments(args);
      const admins = await listAdmins(db);
      return {
        data: admins,
        text: table(
          admins.map((a) => ({ ...a })),
          "No admins yet.",
        ),
      };
    },
  },
  "admins reset-password": {
    run: async (db, args, options) => {
      noArguments(args);
      const email = requiredOption(options, "email");
      const { password, generated } = await passwordFrom(options);
      const admin = await resetAdminPasswordAudited(db, cliActor(), { email, password });
      return {
        data: { ...admin, ...(generated ? { password } : {}) },
        text: `${describe({ ...admin })}${generated ? `\n\nPassword (shown once): ${password}` : ""}\n\nThe admin's sessions have ended.`,
      };
    },
  },
  "admins remove": {
    run: async (db, args, options) => {
      noArguments(args);
      const admin = await removeAdminAudited(db, cliActor(), requiredOption(options, "email"));
      return { data: { ...admin, removed: true }, text: `Removed admin ${admin.email}.` };
    },
  },
  "api-keys list": {
    run: async (db, args) => {
      noArguments(args);
      const keys = await listApiKeys(db);
      return {
        data: keys,
        text: table(
          keys.map((k) => keyRecord(k)),
          "No API keys yet.",
        ),
      };
    },
  },
  "releases yank": yankCommand(true),
  "releases unyank": yankCommand(false),
  "api-keys revoke": {
    run: async (db, args) => {
      const key = await revokeApiKeyAudited(db, cliActor(), oneArgument(args, "API key id"));
      return { data: key, text: describe(keyRecord(key)) };
    },
  },
};

function yankCommand(yanked: boolean): Command {
  return {
    run: async (db, args, options) => {
      noArguments(args);
      const release = await setReleaseYankedAudited(
        db,
        cliActor(),
        requiredOption(options, "product"),
        requiredOption(options, "version"),
        yanked,
      );
      return { data: release, text: describe({ ...release }) };
    },
  };
}

/** With --password-stdin the password is read from stdin; otherwise a strong one is generated. */
async function passwordFrom(options: Options): Promise<{ password: string; generated: boolean }> {
  if (options["password-stdin"] === true) {
    return { password: await readPasswordFromStdin(), generated: false };
  }
  return { password: randomBytes(18).toString("base64url"), generated: true };
}

async function readPasswordFromStdin(): Promise<string> {
  let input = "";
  for await (const chunk of process.stdin) input += chunk;
  const password = input.replace(/\r?\n$/, "");
  if (password === "") throw new UsageError("--password-stdin: no password on standard input");
  return password;
}
