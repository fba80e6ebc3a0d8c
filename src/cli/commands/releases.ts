import {
  changeRollout,
  setCritical,
  setReleaseYanked,
  setRollout,
} from "../../actions/releases.js";
import { listReleases } from "../../domain/releases/manage-releases.js";
import type { ReleaseRollout } from "../../contracts/release-versions.js";
import type { RolloutChange, RolloutPlan } from "../../domain/releases/rollout.js";
import { rolloutRange, rolloutSteps } from "../../contracts/vocabulary.js";
import { integerOption, type Options, requiredOption, switchOption, UsageError } from "../args.js";
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
      const release = await setReleaseYanked(
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

/** A rollout in one line: `rolling 10%`, `paused 43% (every 24 h)`, `released`. */
function rolloutText(release: Pick<ReleaseRollout, "rollout" | "critical">): string {
  const { rollout } = release;
  const state = rollout
    ? `${rollout.state} ${rollout.percent}%${rollout.stepHours === null ? "" : ` (every ${rollout.stepHours} h)`}`
    : "released";
  return release.critical ? `${state}, critical` : state;
}

function inRange(value: number | undefined, name: string, min: number, max: number) {
  if (value !== undefined && (value < min || value > max)) {
    throw new UsageError(`--${name} must be from ${min} to ${max}`);
  }
  return value;
}

/** Exactly one of the rollout command's actions. */
function rolloutAction(options: Options) {
  const percent = inRange(
    integerOption(options, "percent"),
    "percent",
    rolloutRange.minPercent,
    rolloutRange.maxPercent,
  );
  const stepHours = inRange(
    integerOption(options, "step-hours"),
    "step-hours",
    rolloutRange.minStepHours,
    rolloutRange.maxStepHours,
  );
  type Action = { plan: RolloutPlan } | { change: RolloutChange };
  const actions: Action[] = [];
  if (percent !== undefined) actions.push({ plan: { percent } });
  if (stepHours !== undefined) actions.push({ plan: { stepHours } });
  for (const change of ["pause", "resume", "complete"] as const) {
    if (options[change] === true) actions.push({ change });
  }
  const [action] = actions;
  if (actions.length !== 1 || action === undefined) {
    throw new UsageError("give one of --percent, --step-hours, --pause, --resume or --complete");
  }
  return action;
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
            rollout: rolloutText(v),
            entries: v.entries.map((e) => `${e.platform}/${e.arch}`).join(" ") || "none",
          })),
          "No releases yet.",
        ),
      };
    },
  },
  "releases rollout": {
    help: {
      summary: "Roll a version out in phases, or pause, resume or complete it",
      synopsis:
        "--product <slug> --version <v> (--percent <1-100> | --step-hours <h> | --pause | --resume | --complete)",
      options: [
        ["--product <slug>", "the product (required)"],
        ["--version <v>", "the version (required)"],
        ["--percent <n>", "offer the version to n % of machines (raising it only adds machines)"],
        ["--step-hours <h>", `a schedule: a ${rolloutSteps}th more machines every h hours`],
        ["--pause", "halt: no machine without the version is offered it"],
        ["--resume", "continue a paused rollout"],
        ["--complete", "release the version to every machine"],
      ],
      example: "shipkey releases rollout --product desktop-app --version 1.4.0 --percent 10",
    },
    run: async (db, args, options) => {
      noArguments(args);
      const product = requiredOption(options, "product");
      const version = requiredOption(options, "version");
      const action = rolloutAction(options);
      const release =
        "plan" in action
          ? await setRollout(db, cliActor(), product, version, action.plan)
          : await changeRollout(db, cliActor(), product, version, action.change);
      return {
        data: release,
        text: describe({ product, version, rollout: rolloutText(release) }),
      };
    },
  },
  "releases critical": {
    help: {
      summary: "Mark a version critical (it skips its rollout) or not",
      synopsis: "--product <slug> --version <v> --critical on|off",
      options: [
        ["--product <slug>", "the product (required)"],
        ["--version <v>", "the version (required)"],
        ["--critical on|off", "critical or not (required)"],
      ],
      example: "shipkey releases critical --product desktop-app --version 1.4.1 --critical on",
    },
    run: async (db, args, options) => {
      noArguments(args);
      const critical = switchOption(options, "critical");
      if (critical === undefined) throw new UsageError("--critical on|off is required");
      const product = requiredOption(options, "product");
      const version = requiredOption(options, "version");
      const release = await setCritical(db, cliActor(), product, version, critical);
      return { data: release, text: describe({ product, version, rollout: rolloutText(release) }) };
    },
  },
  "releases yank": yankCommand(true),
  "releases unyank": yankCommand(false),
};
