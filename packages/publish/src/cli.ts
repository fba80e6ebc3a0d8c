#!/usr/bin/env node
import { parseArgs } from "node:util";
import { escapeControlCharacters } from "./control-characters.js";
import {
  CommandError,
  type CommandResult,
  publishOptions,
  UsageError,
  usageErrorOf,
} from "./options.js";
import { publishCommand } from "./publish.js";
import { arches, channels, platforms, rolloutRange, rolloutSteps } from "./targets.js";

/**
 * `shipkey-publish [options] <file>...`: the publish of `shipkey publish`, on its own. With
 * --json, stdout carries exactly one JSON document; errors always go to stderr.
 */
const range = rolloutRange;
const usage = `Usage: shipkey-publish --server <url> --product <slug> --version <v>
    --channel ${channels.join("|")} --base-url <https url> [--notes-file <path>]
    [--platform ${platforms.join("|")}] [--arch ${arches.join("|")}] [--timeout <seconds>]
    [--rollout-percent <${range.minPercent}-${range.maxPercent}> | --rollout-step-hours <${range.minStepHours}-${range.maxStepHours}>] [--critical]
    [--dry-run] [--json] <file>...

Registers the artifacts with a Shipkey server over HTTP, with the API key (scope
releases:write) in SHIPKEY_API_KEY. Upload the files to your own storage first: each entry's
download URL is --base-url followed by the file name. --rollout-percent offers the version to
that share of machines, --rollout-step-hours in ${rolloutSteps} steps of that many hours;
--critical marks it critical. --dry-run prints the request (the key
redacted) and sends nothing. --json prints exactly one JSON document on stdout.
`;

async function main(argv: string[]): Promise<number> {
  let json = argv.includes("--json");
  try {
    const { values, positionals } = parseCommandLine(argv);
    json = values.json === true;
    if (values.help === true) {
      process.stdout.write(usage);
      return 0;
    }
    const result: CommandResult = await publishCommand(positionals, values);
    process.stdout.write(json ? `${JSON.stringify(result.data, null, 2)}\n` : `${result.text}\n`);
    return 0;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const error = err instanceof CommandError ? err.error : message;
    process.stderr.write(
      json
        ? `${JSON.stringify({ error, code: codeOf(err) })}\n`
        : `shipkey-publish: ${escapeControlCharacters(message)}\n`,
    );
    if (err instanceof UsageError && !json) {
      process.stderr.write("Run `shipkey-publish --help` for usage.\n");
    }
    return err instanceof UsageError ? 2 : 1;
  }
}

function parseCommandLine(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        ...publishOptions,
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    throw usageErrorOf(err);
  }
}

function codeOf(err: unknown): string {
  if (err instanceof CommandError) return err.code;
  return err instanceof UsageError ? "USAGE" : "ERROR";
}

process.exitCode = await main(process.argv.slice(2));
