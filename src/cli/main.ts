import { databaseUrlFrom } from "../config.js";
import { openDatabase } from "../db/database.js";
import { migrateToLatest } from "../db/migrate.js";
import { ShipkeyError } from "../errors.js";
import { escapeControlCharacters } from "../lib/control-characters.js";
import { parseCommandLine, UsageError } from "./args.js";
import { commands, usage } from "./commands.js";

/**
 * `shipkey <group> <action> [options]`. Talks to the database named by DATABASE_URL directly,
 * creating and migrating it if needed, so it works on a fresh database and beside a running server.
 * With --json, stdout carries exactly one JSON document; errors always go to stderr.
 */
const singleWordCommands = new Set(["migrate", "prune"]);

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
    const command = commands[name];
    if (!command) throw new UsageError(`unknown command "${name.trim()}"`);
    const args = single ? [action, ...rest].filter((a) => a !== undefined) : rest;

    const database = await openDatabase(databaseUrlFrom());
    try {
      await migrateToLatest(database.db);
      const result = await command.run(database.db, args, options);
      process.stdout.write(json ? `${JSON.stringify(result.data, null, 2)}\n` : `${result.text}\n`);
      return 0;
    } finally {
      await database.close();
    }
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const code =
      err instanceof ShipkeyError ? err.code : err instanceof UsageError ? "USAGE" : "ERROR";
    process.stderr.write(
      json
        ? `${JSON.stringify({ error: message, code })}\n`
        : `shipkey: ${escapeControlCharacters(message)}\n`,
    );
    if (err instanceof UsageError && !json) process.stderr.write("Run `shipkey help` for usage.\n");
    return err instanceof UsageError ? 2 : 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
