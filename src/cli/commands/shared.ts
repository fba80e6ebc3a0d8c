import os from "node:os";
import { type CommandResult, escapeControlCharacters } from "@shipkey/publish";
import type { Kysely } from "kysely";
import { databaseUrlFrom, masterKeyFromEnv } from "../../config.js";
import type { DB } from "../../db/schema.js";
import type { Actor } from "../../domain/audit/audit-log.js";
import type { MasterKey } from "../../domain/signing/key-material.js";
import { resolveVerifiedMasterKey } from "../../master-key.js";
import { integerOption, type Options, stringOption, UsageError } from "../args.js";

export type { CommandResult };

/** What `shipkey <command> --help` prints, and the command's line in `shipkey --help`. */
export interface CommandHelp {
  /** One line: what the command does. */
  summary: string;
  /** Arguments and options after the command's name, e.g. `<slug> [--force]`. */
  synopsis: string;
  /** Each option (or argument) with one line saying what it does. */
  options: ReadonlyArray<readonly [name: string, description: string]>;
  example: string;
}

/**
 * What a command may read and write besides the database: the environment, standard input and
 * standard error. `shipkey` passes the process's own; tests pass their own.
 */
export interface CommandContext {
  env: NodeJS.ProcessEnv;
  stdin: AsyncIterable<string | Buffer>;
  /** Writes a line of advice to standard error (stdout carries only the result). */
  warn(line: string): void;
}

/** A command that works on the database. */
export interface Command {
  help: CommandHelp;
  run(
    db: Kysely<DB>,
    args: string[],
    options: Options,
    context: CommandContext,
  ): Promise<CommandResult>;
}

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
export async function cliMasterKey(db: Kysely<DB>, context: CommandContext): Promise<MasterKey> {
  const { key, createdFile } = await resolveVerifiedMasterKey(
    masterKeyFromEnv(context.env),
    databaseUrlFrom(context.env),
    db,
  );
  if (createdFile) {
    context.warn(`created the master key file ${createdFile}: back it up with the database`);
  }
  return key;
}

/** The master key when this environment has one; else null (the server makes the key later). */
export async function masterKeyIfAvailable(
  db: Kysely<DB>,
  context: CommandContext,
): Promise<MasterKey | null> {
  const { env } = context;
  if (masterKeyFromEnv(env) === null && databaseUrlFrom(env).startsWith("postgres")) return null;
  return cliMasterKey(db, context);
}

export function oneArgument(args: string[], what: string): string {
  const [value, ...extra] = args;
  if (value === undefined || extra.length > 0) throw new UsageError(`expected exactly one ${what}`);
  return value;
}

export function noArguments(args: string[]): void {
  if (args.length > 0) throw new UsageError(`unexpected argument "${args[0]}"`);
}

/** A churn limit: a whole number, or the word that means null (`none`, `product`). */
export function limitOption(
  options: Options,
  name: string,
  nullWord: string,
): number | null | undefined {
  if (stringOption(options, name) === nullWord) return null;
  return integerOption(options, name);
}

/** A value for the human output: lists joined, null as `-`, control characters escaped. */
function shown(value: unknown): string {
  const text = Array.isArray(value) ? value.join(", ") : value === null ? "-" : String(value);
  return escapeControlCharacters(text);
}

/**
 * Human output: aligned `key  value` lines. Control characters in a value (an escape sequence
 * stored by hand or by an older version, a line break in a note) are printed escaped (`\x1b`,
 * `\n`), so a value can neither drive the terminal nor break the layout.
 */
export function describe(record: Record<string, unknown>): string {
  const width = Math.max(...Object.keys(record).map((k) => k.length));
  return Object.entries(record)
    .map(([key, value]) => `${key.padEnd(width)}  ${shown(value)}`)
    .join("\n");
}

/** Records as `describe` blocks separated by a blank line; `empty` when there are none. */
export function table(rows: Array<Record<string, unknown>>, empty: string): string {
  if (rows.length === 0) return empty;
  return rows.map((row) => describe(row)).join("\n\n");
}

/**
 * Records as one line each under a header of their keys, in aligned columns (values escaped as
 * in `describe`); `empty` when there are none.
 */
export function columns(rows: Array<Record<string, unknown>>, empty: string): string {
  const first = rows[0];
  if (first === undefined) return empty;
  const keys = Object.keys(first);
  const cells = [keys, ...rows.map((row) => keys.map((key) => shown(row[key])))];
  const widths = keys.map((_, i) => Math.max(...cells.map((line) => (line[i] ?? "").length)));
  return cells
    .map((line) =>
      line
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}
