import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { escapeControlCharacters } from "@shipkey/publish";
import { databaseUrlFrom } from "../config.js";
import { openDatabase, parseDatabaseUrl } from "../db/database.js";
import { migrateToLatest } from "../db/migrate.js";
import { ShipkeyError } from "../errors.js";
import { CommandError, type Options, parseCommandLine, stringOption, UsageError } from "./args.js";
import {
  type CommandHelp,
  type CommandResult,
  commands,
  serverCommands,
  singleWordCommands,
} from "./commands.js";
import type { CommandContext } from "./commands/shared.js";
import { renderCommandHelp, renderUsage } from "./help.js";

/**
 * `shipkey <group> <action> [options]`. Talks to the database named by DATABASE_URL directly,
 * creating and migrating it if needed, so it works on a fresh database and beside a running server.
 * `publish` is the exception: @shipkey/publish's command, it talks to a Shipkey server over HTTP
 * and never opens a database.
 * With --json, stdout carries exactly one JSON document; errors always go to stderr.
 * Exit status: 0 done, 1 refused or failed, 2 a usage mistake.
 */

/** Where a run of the CLI reads and writes: the process's own in `shipkey`, a test's own in tests. */
export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdin: AsyncIterable<string | Buffer>;
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

/** What the words of a command line name: a command (with its arguments), a group, or nothing. */
type Named =
  | { kind: "command"; name: string; help: CommandHelp; args: string[] }
  | { kind: "group"; group: string; next: string | undefined }
  | { kind: "unknown"; name: string };

function named(words: string[]): Named {
  const [first = "", second, ...rest] = words;
  const single = singleWordCommands.has(first);
  const name = single ? first : `${first} ${second ?? ""}`;
  const command = commands[name] ?? serverCommands[name];
  if (command) {
    const args = single ? words.slice(1) : rest;
    return { kind: "command", name, help: command.help, args };
  }
  const isGroup = Object.keys(commands).some((n) => n.startsWith(`${first} `));
  if (isGroup) return { kind: "group", group: first, next: second };
  return { kind: "unknown", name: first };
}

function groupActions(group: string): string[] {
  return Object.keys(commands)
    .filter((n) => n.startsWith(`${group} `))
    .map((n) => n.slice(group.length + 1));
}

/** The version in package.json, two folders up from this file (src/cli or dist/cli). */
function version(): string {
  const manifest = readFileSync(new URL("../../package.json", import.meta.url), "utf8");
  return (JSON.parse(manifest) as { version: string }).version;
}

/** Runs one command line; answers the exit status. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const { stdout, stderr } = io;
  if (argv.length === 0) {
    stderr.write(renderUsage());
    return 2;
  }
  if (argv.length === 1 && argv[0] === "--version") {
    stdout.write(`${version()}\n`);
    return 0;
  }
  let json = argv.includes("--json");
  // The command's (or group's) --help for the usage hint; known before the options are parsed.
  const helpFor = helpCommandOf(argv);
  let productSlug: string | undefined;
  try {
    const { positionals, options } = parseCommandLine(argv);
    json = options.json === true;
    const helpWord = positionals[0] === "help";
    const words = helpWord ? positionals.slice(1) : positionals;
    const target = words.length === 0 ? null : named(words);

    if (options.help === true || helpWord) {
      stdout.write(helpText(target));
      return 0;
    }
    if (target === null) {
      stderr.write(renderUsage());
      return 2;
    }
    if (target.kind === "group") {
      throw new UsageError(
        target.next === undefined
          ? `"${target.group}" needs a command: ${groupActions(target.group).join(", ")}`
          : `unknown command "${target.group} ${target.next}"`,
      );
    }
    if (target.kind === "unknown") throw new UsageError(`unknown command "${target.name}"`);

    const { name, args } = target;
    productSlug = productNamed(name, args, options);
    const serverCommand = serverCommands[name];
    if (serverCommand) {
      stdout.write(printed(await serverCommand.run(args, options, io.env), json));
      return 0;
    }
    const command = commands[name];
    if (!command) throw new UsageError(`unknown command "${name}"`);

    const context: CommandContext = {
      env: io.env,
      stdin: io.stdin,
      warn: (line) => stderr.write(`shipkey: ${line}\n`),
    };
    const databaseUrl = databaseUrlFrom(io.env);
    const created = newDatabaseNotice(databaseUrl);
    if (created !== null) context.warn(created);
    const database = await openDatabase(databaseUrl);
    try {
      // `migrate` migrates itself, to say what it did.
      if (name !== "migrate") await migrateToLatest(database.db);
      stdout.write(printed(await command.run(database.db, args, options, context), json));
      return 0;
    } finally {
      await database.close();
    }
  } catch (err) {
    const message = messageOf(err, productSlug);
    const error = err instanceof CommandError ? err.error : message;
    stderr.write(
      json
        ? `${JSON.stringify({ error, code: codeOf(err) })}\n`
        : `shipkey: ${escapeControlCharacters(message)}\n`,
    );
    if (err instanceof UsageError && !json) {
      stderr.write(`Run \`${helpFor}\` for usage.\n`);
    }
    return err instanceof UsageError ? 2 : 1;
  }
}

/** `shipkey <command> --help` for the command (or group) the leading words name. */
function helpCommandOf(argv: string[]): string {
  const end = argv.findIndex((arg) => arg.startsWith("-"));
  const words = argv.slice(0, end === -1 ? argv.length : end);
  const target = words.length === 0 ? null : named(words);
  if (target?.kind === "command") return `shipkey ${target.name} --help`;
  if (target?.kind === "group") return `shipkey ${target.group} --help`;
  return "shipkey --help";
}

/** `--help` (or `help`): the whole usage, one group's commands, or one command's usage. */
function helpText(target: Named | null): string {
  if (target === null) return renderUsage();
  if (target.kind === "command") return renderCommandHelp(target.name, target.help);
  if (target.kind === "group" && target.next === undefined) return renderUsage(target.group);
  const name = target.kind === "group" ? `${target.group} ${target.next ?? ""}` : target.name;
  throw new UsageError(`unknown command "${name}"`);
}

/** The product a command line names: its --product, or the slug a `products` command takes. */
function productNamed(name: string, args: string[], options: Options): string | undefined {
  return stringOption(options, "product") ?? (name.startsWith("products ") ? args[0] : undefined);
}

/**
 * The error's message; `Product not found` also names the slug (the spec's text, which the HTTP
 * answers keep exactly, does not).
 */
function messageOf(err: unknown, productSlug: string | undefined): string {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof ShipkeyError && err.code === "PRODUCT_NOT_FOUND" && productSlug) {
    return `${message}: "${productSlug}"`;
  }
  return message;
}

/**
 * What to say on stderr when this command is about to create a SQLite database: run from another
 * directory, a relative DATABASE_URL (the default ./data/shipkey.db) names a new, empty one.
 */
function newDatabaseNotice(databaseUrl: string): string | null {
  const target = parseDatabaseUrl(databaseUrl);
  if (target.dialect !== "sqlite" || target.path === ":memory:" || existsSync(target.path)) {
    return null;
  }
  return `creating a new database at ${resolve(target.path)} (DATABASE_URL=${databaseUrl}, run from ${process.cwd()})`;
}

function printed(result: CommandResult, json: boolean): string {
  return json ? `${JSON.stringify(result.data, null, 2)}\n` : `${result.text}\n`;
}

function codeOf(err: unknown): string {
  if (err instanceof ShipkeyError || err instanceof CommandError) return err.code;
  return err instanceof UsageError ? "USAGE" : "ERROR";
}
