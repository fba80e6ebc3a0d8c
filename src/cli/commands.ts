import { type CommandResult, publishCommand } from "@shipkey/publish";
import { adminCommands } from "./commands/admins.js";
import { apiKeyCommands } from "./commands/api-keys.js";
import { licenseCommands } from "./commands/licenses.js";
import { maintenanceCommands } from "./commands/maintenance.js";
import { planCommands } from "./commands/plans.js";
import { productCommands } from "./commands/products.js";
import { releaseCommands } from "./commands/releases.js";
import { webhookCommands } from "./commands/webhooks.js";
import { emailCommands } from "./commands/emails.js";
import { integrationCommands } from "./commands/integrations.js";
import type { Command, CommandHelp } from "./commands/shared.js";
import type { Options } from "./args.js";
import {
  arches,
  channels,
  platforms,
  rolloutRange,
  rolloutSteps,
} from "../contracts/vocabulary.js";

export type { Command, CommandHelp, CommandResult };

/** Every command that works on the database, by name, in the order `shipkey --help` lists them. */
export const commands: Record<string, Command> = {
  ...maintenanceCommands,
  ...productCommands,
  ...planCommands,
  ...licenseCommands,
  ...releaseCommands,
  ...adminCommands,
  ...apiKeyCommands,
  ...webhookCommands,
  ...emailCommands,
  ...integrationCommands,
};

/** A command that needs no database: @shipkey/publish's, over HTTP. */
export interface ServerCommand {
  help: CommandHelp;
  run(args: string[], options: Options, env: NodeJS.ProcessEnv): Promise<CommandResult>;
}

// The publish options' values, as the vocabulary has them.
const channel = channels.join("|");
const platform = platforms.join("|");
const arch = arches.join("|");
const percent = `${rolloutRange.minPercent}-${rolloutRange.maxPercent}`;
const stepHours = `${rolloutRange.minStepHours}-${rolloutRange.maxStepHours}`;

export const serverCommands: Record<string, ServerCommand> = {
  publish: {
    help: {
      summary: "Publish a release to a server over HTTP (no database)",
      synopsis: `--server <url> --product <slug> --version <v> --channel ${channel} --base-url <https url> [--notes-file <path>] [--platform ${platform}] [--arch ${arch}] [--timeout <seconds>] [--rollout-percent <${percent}> | --rollout-step-hours <${stepHours}>] [--critical] [--dry-run] <file>...`,
      options: [
        ["--server <url>", "the Shipkey server (https; http only for localhost) (required)"],
        ["--product <slug>", "the product (required)"],
        ["--version <v>", "the version, semver (required)"],
        [`--channel ${channel}`, "the channel (required)"],
        ["--base-url <https url>", "where the files are downloaded from; + file name (required)"],
        ["--notes-file <path>", "release notes, Markdown"],
        [`--platform ${platform}`, "the platform of every file, when its name does not say"],
        [`--arch ${arch}`, "the arch of every file, when its name does not say"],
        ["--timeout <seconds>", "how long to wait for the server's answer (default 30)"],
        [`--rollout-percent <${percent}>`, "publish into a rollout: that share of machines"],
        [
          `--rollout-step-hours <${stepHours}>`,
          `publish into a rollout of ${rolloutSteps} steps, one every so many hours`,
        ],
        ["--critical", "mark the version critical (offered to all, rollout or not)"],
        ["--dry-run", "print the request as JSON (key redacted) and send nothing"],
        ["<file>...", "the artifacts; .sig files beside them are read as signatures"],
      ],
      example:
        "shipkey publish --server https://shipkey.example.com --product desktop-app --version 1.4.0 --channel STABLE --base-url https://cdn.example.com/app/1.4.0/ dist/*",
    },
    run: publishCommand,
  },
};

/** Commands named by one word (`migrate`); the others by two (`licenses list`). */
export const singleWordCommands = new Set(
  [...Object.keys(commands), ...Object.keys(serverCommands)].filter((name) => !name.includes(" ")),
);

/** Every command's help, in the order `shipkey --help` lists them. */
export function allCommandHelp(): Array<[name: string, help: CommandHelp]> {
  return [
    ...Object.entries(commands).map(([name, c]): [string, CommandHelp] => [name, c.help]),
    ...Object.entries(serverCommands).map(([name, c]): [string, CommandHelp] => [name, c.help]),
  ];
}
