import { archivePlan, createPlan, unarchivePlan, updatePlan } from "../../actions/plans.js";
import { listPlans, type Plan, type PlanSettings } from "../../domain/plans/plans.js";
import { planRanges, type PlanReaction, planReactions } from "../../contracts/vocabulary.js";
import {
  integerOption,
  listOption,
  type Options,
  requiredOption,
  stringOption,
  switchOption,
  UsageError,
} from "../args.js";
import {
  cliActor,
  type Command,
  describe,
  limitOption,
  noArguments,
  oneArgument,
  table,
} from "./shared.js";

const reactions = planReactions.join("|");
const leases = `${planRanges.minLeaseMinutes}-${planRanges.maxLeaseMinutes}`;

/** The options that set a plan's settings, as `planSettings` reads them. */
const settingOptions = {
  "--edition <e>": "the edition's code its licenses get, e.g. pro; empty: none",
  "--edition-name <n>": "the edition's display name; empty: none",
  "--features <a,b,c>": "comma-separated feature codes; empty: none",
  "--duration-days <n>|perpetual": "how long its licenses last (default perpetual)",
  "--updates-window-days <n>|none": "days of updates from purchase; none: while valid (default)",
  "--subscription on|off": "a subscription: expiry = paid period's end + grace (default off)",
  "--grace-days <n>": "a subscription's days of grace after its period (default 0)",
  [`--on-refund ${reactions}`]: "what a full refund does to its license (default revoke)",
  [`--on-chargeback ${reactions}`]: "what a chargeback does to its license (default suspend)",
  [`--floating-lease-minutes <${leases}>|none`]: "a floating seat's lease; none: node-locked",
} as const;

function reactionOption(options: Options, name: string): PlanReaction | undefined {
  const value = stringOption(options, name);
  if (value === undefined) return undefined;
  if (!(planReactions as readonly string[]).includes(value)) {
    throw new UsageError(`--${name} must be one of ${planReactions.join(", ")}`);
  }
  return value as PlanReaction;
}

function planSettings(options: Options): PlanSettings {
  return {
    name: stringOption(options, "name"),
    maxMachines: integerOption(options, "max-machines"),
    edition: stringOption(options, "edition"),
    editionName: stringOption(options, "edition-name"),
    features: listOption(options, "features"),
    durationDays: limitOption(options, "duration-days", "perpetual"),
    updatesWindowDays: limitOption(options, "updates-window-days", "none"),
    subscription: switchOption(options, "subscription"),
    graceDays: integerOption(options, "grace-days"),
    onRefund: reactionOption(options, "on-refund"),
    onChargeback: reactionOption(options, "on-chargeback"),
    floatingLeaseMinutes: limitOption(options, "floating-lease-minutes", "none"),
  };
}

/** Only the settings given: undefined ones are left out of the action's input. */
function given(settings: PlanSettings): PlanSettings {
  return Object.fromEntries(Object.entries(settings).filter(([, v]) => v !== undefined));
}

const settingsSynopsis = Object.keys(settingOptions)
  .map((option) => `[${option}]`)
  .join(" ");

const productOption = ["--product <slug>", "the product whose plans these are (required)"] as const;
const planArgument = ["<plan>", "the plan's slug"] as const;

function planText(plan: Plan): string {
  return describe({ ...plan });
}

/** `<plan> --product <slug>`: the plan's slug and its product's. */
function planNamed(args: string[], options: Options) {
  return { plan: oneArgument(args, "plan slug"), product: requiredOption(options, "product") };
}

export const planCommands: Record<string, Command> = {
  "plans list": {
    help: {
      summary: "List a product's plans (license templates), archived ones too",
      synopsis: "--product <slug>",
      options: [productOption],
      example: "shipkey plans list --product desktop-app",
    },
    run: async (db, args, options) => {
      noArguments(args);
      const plans = await listPlans(db, requiredOption(options, "product"));
      return {
        data: plans,
        text: table(
          plans.map((p) => ({ ...p })),
          "No plans.",
        ),
      };
    },
  },
  "plans create": {
    help: {
      summary: "Create a plan: the settings of the licenses made from it",
      synopsis: `--product <slug> --slug <slug> --name <name> --max-machines <n> ${settingsSynopsis}`,
      options: [
        productOption,
        ["--slug <slug>", "the plan's stable code, unique per product (required)"],
        ["--name <name>", "its display name (required)"],
        ["--max-machines <n>", "machine slots per unit bought (required)"],
        ...Object.entries(settingOptions),
      ],
      example:
        "shipkey plans create --product desktop-app --slug pro-yearly --name Pro --max-machines 2 --duration-days 365",
    },
    run: async (db, args, options) => {
      noArguments(args);
      const settings = planSettings(options);
      const maxMachines = settings.maxMachines;
      if (maxMachines === undefined) throw new UsageError("--max-machines is required");
      const plan = await createPlan(db, cliActor(), requiredOption(options, "product"), {
        ...given(settings),
        slug: requiredOption(options, "slug"),
        name: requiredOption(options, "name"),
        maxMachines,
      });
      return { data: plan, text: planText(plan) };
    },
  },
  "plans update": {
    help: {
      summary: "Change a plan's settings; the licenses made from it keep theirs",
      synopsis: `<plan> --product <slug> [--name <name>] [--max-machines <n>] ${settingsSynopsis}`,
      options: [
        planArgument,
        productOption,
        ["--name <name>", "a new display name"],
        ["--max-machines <n>", "machine slots per unit bought"],
        ...Object.entries(settingOptions),
      ],
      example: "shipkey plans update pro-yearly --product desktop-app --max-machines 3",
    },
    run: async (db, args, options) => {
      const { plan, product } = planNamed(args, options);
      const changes = given(planSettings(options));
      if (Object.keys(changes).length === 0) {
        throw new UsageError("plans update needs a setting to change (see --help)");
      }
      const updated = await updatePlan(db, cliActor(), product, plan, changes);
      return { data: updated, text: planText(updated) };
    },
  },
  "plans archive": {
    help: {
      summary: "Archive a plan (it makes no new license), or --restore it",
      synopsis: "<plan> --product <slug> [--restore]",
      options: [
        planArgument,
        productOption,
        ["--restore", "put an archived plan back in use instead"],
      ],
      example: "shipkey plans archive pro-yearly --product desktop-app",
    },
    run: async (db, args, options) => {
      const { plan, product } = planNamed(args, options);
      const change = options.restore === true ? unarchivePlan : archivePlan;
      const changed = await change(db, cliActor(), product, plan);
      return { data: changed, text: planText(changed) };
    },
  },
};
