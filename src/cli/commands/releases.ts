import { setReleaseYankedAudited } from "../../domain/audit/audited-actions.js";
import { listReleases } from "../../domain/releases/manage-releases.js";
import { requiredOption } from "../args.js";
import { cliActor, columns, type Command, describe, noArguments } from "./shared.js";

function yankCommand(yanked: boolean): Command {
  return {
    help: yanked
      ? {
          summary: "Withdraw a version: every update feed skips it from now on",
          synopsis: "--product <slug> --version <v>",
          options: [
            ["--product <slug>", "the product (required)"],
            ["--version <v>", "the version to withdraw (required)"],
          ],
          example: "shipkey releases yank --product desktop-app --version 1.4.0",
        }
      : {
          summary: "Offer a yanked version in the update feeds again",
          synopsis: "--product <slug> --version <v>",
          options: [
            ["--product <slug>", "the product (required)"],
            ["--version <v>", "the version to offer again (required)"],
          ],
          example: "shipkey releases unyank --product desktop-app --version 1.4.0",
        },
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

export const releaseCommands: Record<string, Command> = {
  "releases list": {
    help: {
      summary: "List a product's versions with channel, entries and yanked state",
      synopsis: "--product <slug>",
      options: [["--product <slug>", "the product (required)"]],
      example: "shipkey releases list --product desktop-app",
    },
    run: async (db, args, options) => {
      noArguments(args);
      const versions = await listReleases(db, requiredOption(options, "product"));
      return {
        data: versions,
        text: columns(
          versions.map((v) => ({
            version: v.version,
            channel: v.channel,
            yanked: v.yankedAt ?? "no",
            entries: v.entries.map((e) => `${e.platform}/${e.arch}`).join(" ") || "none",
          })),
          "No releases yet.",
        ),
      };
    },
  },
  "releases yank": yankCommand(true),
  "releases unyank": yankCommand(false),
};
