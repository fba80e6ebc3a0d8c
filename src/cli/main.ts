import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { escapeControlCharacters, publishCommand } from "@shipkey/publish";
import { databaseUrlFrom } from "../config.js";
import { openDatabase, parseDatabaseUrl } from "../db/database.js";
import { migrateToLatest } from "../db/migrate.js";
import { ShipkeyError } from "../errors.js";
import { CommandError, type Options, parseCommandLine, UsageError } from "./args.js";
import { type CommandResult, commands, usage } from "./commands.js";

/**
 * `shipkey <group> <action> [options]`. Talks to the database named by DATABASE_URL directly,
 * creating and migrating it if needed, so it works on a fresh database and beside a running server.
 * `publish` is the exception: @shipkey/publish's command, it talks to a Shipkey server over HTTP
 * and never opens a database.
 * With --json, stdout carries exactly one JSON document; errors always go to stderr.
 */
const singleWordCommands = new Set(["migrate", "prune", "publish"]);

/** Commands that need no database. */
const serverCommands: Record<string, (args: string[], options: Options) => Promise<CommandResult>> =
  { publish: publishCommand };

async function main(argv: string[]): Promise<number> {
  let json = argv.includes("--json");
  try {
    const { positionals, options } = parseCommandLine(argv);
    json = options.json === true;
    const [group, action, ...rest] = positionals;
    if (options.help || group === undefined || group === "help") {
      process.stdout.write(usage);
      return 0;
    }
    const single = singleWordCommands.has(group);
    const name = single ? group : `${group} ${action ?? ""}`;
    const args = single ? [action, ...rest].filter((a) => a !== undefined) : rest;
    const serverCommand = serverCommands[name];
    if (serverCommand) {
      print(await serverCommand(args, options), json);
      return 0;
    }
    const command = commands[name];
    if (!command) throw new UsageError(`unknown command "${name.trim()}"`);

    const databaseUrl = databaseUrlFrom();
    announceNewDatabase(databaseUrl);
    const database = await openDatabase(databaseUrl);
    try {
      await migrateToLatest(database.db);
      print(await command.run(database.db, args, options), json);
      return 0;
    } finally {
      await database.close();
    }
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const error = err instanceof CommandError ? err.error : message;
    process.stderr.write(
      json
        ? `${JSON.stringify({ error, code: codeOf(err) })}\n`
        : `shipkey: ${escapeControlCharacters(message)}\n`,
    );
    if (err instanceof UsageError && !json) process.stderr.write("Run `shipkey help` for usage.\n");
    return err instanceof UsageError ? 2 : 1;
  }
}

/**
 * Says on stderr when this command is about to create a SQLite database: run from another
 * directory, a relative DATABASE_URL (the default ./data/shipkey.db) names a new, empty one.
 */
function announceNewDatabase(databaseUrl: string): void {
  const target = parseDatabaseUrl(databaseUrl);
  if (target.dialect !== "sqlite" || target.path === ":memory:" || existsSync(target.path)) return;
  process.stderr.write(
    `shipkey: creating a new database at ${resolve(target.path)} (DATABASE_URL=${databaseUrl}, run from ${process.cwd()})\n`,
  );
}

function print(result: CommandResult, json: boolean): void {
  process.stdout.write(json ? `${JSON.stringify(result.data, null, 2)}\n` : `${result.text}\n`);
}

function codeOf(err: unknown): string {
  if (err instanceof ShipkeyError || err instanceof CommandError) return err.code;
  return err instanceof UsageError ? "USAGE" : "ERROR";
}

process.exitCode = await main(process.argv.slice(2));
