import { publicUrlFrom } from "../../config.js";
import {
  addSigningSecret,
  changeIntegration,
  connectPaymentProvider,
  disconnectPaymentProvider,
  mapPriceToPlan,
  removeSigningSecret,
  unmapPrice,
} from "../../actions/integrations.js";
import { listPriceMappings } from "../../domain/integrations/prices.js";
import { replayPaymentEvent } from "../../actions/integration-events.js";
import { listIntegrationEvents } from "../../domain/integrations/event-ledger.js";
import { listIntegrations } from "../../domain/integrations/integrations.js";
import { type Options, requiredOption, stringOption, UsageError } from "../args.js";
import {
  cliActor,
  cliMasterKey,
  columns,
  type Command,
  type CommandContext,
  describe,
  noArguments,
  oneArgument,
  table,
} from "./shared.js";
import {
  integrationEventStatuses,
  type IntegrationMode,
  integrationModes,
  type IntegrationProvider,
  integrationProviders,
  pageLimits,
  quantityMeanings,
} from "../../contracts/vocabulary.js";

/** The webhook URLs start with PUBLIC_URL; without it, the path alone is shown. */
const originOf = (context: CommandContext) => publicUrlFrom(context.env.PUBLIC_URL) ?? "";

/** The signing secret, from standard input (never an argument: shell history, `ps`). */
async function secretFrom(context: CommandContext): Promise<string> {
  let input = "";
  for await (const chunk of context.stdin) input += chunk.toString();
  const secret = input.replace(/\r?\n$/, "");
  if (secret === "") throw new UsageError("--secret-stdin: no secret on standard input");
  return secret;
}

function requireSecretStdin(options: Options): void {
  if (options["secret-stdin"] !== true) {
    throw new UsageError("--secret-stdin is required: pipe the provider's signing secret in");
  }
}

function modeOption(options: Options): IntegrationMode | undefined {
  const mode = stringOption(options, "mode");
  if (mode === undefined) return undefined;
  const found = integrationModes.find((m) => m === mode);
  if (!found) throw new UsageError(`--mode must be one of ${integrationModes.join(", ")}`);
  return found;
}

const pasteHint = (url: string) =>
  `Paste this URL into the provider's webhook settings: ${url}` +
  (url.startsWith("/")
    ? " (after the address the provider reaches the server at; set PUBLIC_URL)"
    : "");

export const integrationCommands: Record<string, Command> = {
  "integrations create": {
    help: {
      summary: "Connect a product to Stripe, Paddle or Lemon Squeezy",
      synopsis: `--product <slug> --provider ${integrationProviders.join("|")} --secret-stdin [--mode live|test] [--description <text>]`,
      options: [
        ["--product <slug>", "the product whose licenses its sales create (required)"],
        [`--provider ${integrationProviders.join("|")}`, "the payment provider (required)"],
        ["--secret-stdin", "read the provider's signing secret from stdin (required)"],
        ["--mode live|test", "live (default) ignores test-mode events; test ignores live ones"],
        ["--description <text>", "what the integration is for"],
      ],
      example:
        "shipkey integrations create --product desktop-app --provider stripe --secret-stdin < whsec.txt",
    },
    run: async (db, args, options, context) => {
      noArguments(args);
      requireSecretStdin(options);
      const providerText = requiredOption(options, "provider");
      const provider = integrationProviders.find((p) => p === providerText);
      if (!provider) {
        throw new UsageError(`--provider must be one of ${integrationProviders.join(", ")}`);
      }
      const mode = modeOption(options);
      const created = await connectPaymentProvider(
        db,
        cliActor(),
        await cliMasterKey(db, context),
        {
          product: requiredOption(options, "product"),
          provider: provider satisfies IntegrationProvider,
          ...(mode === undefined ? {} : { mode }),
          secret: await secretFrom(context),
          description: stringOption(options, "description") ?? null,
        },
        originOf(context),
      );
      return { data: created, text: `${describe(created)}\n\n${pasteHint(created.webhookUrl)}` };
    },
  },
  "integrations list": {
    help: {
      summary: "List the payment integrations and their webhook URLs",
      synopsis: "",
      options: [],
      example: "shipkey integrations list",
    },
    run: async (db, args, _options, context) => {
      noArguments(args);
      const items = await listIntegrations(db, originOf(context));
      return {
        data: items,
        text: table(
          items.map((i) => ({ ...i, secrets: i.secrets.map((s) => s.id).join(", ") })),
          "No integrations yet.",
        ),
      };
    },
  },
  "integrations update": {
    help: {
      summary: "Change an integration's mode, description or signing secrets",
      synopsis:
        "<id> [--mode live|test] [--description <text>] [--secret-stdin] [--remove-secret <secret id>]",
      options: [
        ["<id>", "the integration's id, as integrations list shows it"],
        ["--mode live|test", "which events it acts on"],
        ["--description <text>", 'what the integration is for ("" clears it)'],
        ["--secret-stdin", "add the signing secret on stdin (a rotation's first half)"],
        ["--remove-secret <secret id>", "remove that secret (a rotation's second half)"],
      ],
      example:
        "shipkey integrations update int_01JD8X3V6Q2WHM4KZR7TXN --secret-stdin < new-secret.txt",
    },
    run: async (db, args, options, context) => {
      const id = oneArgument(args, "integration id");
      const mode = modeOption(options);
      const description = stringOption(options, "description");
      const removeSecret = stringOption(options, "remove-secret");
      const addSecret = options["secret-stdin"] === true;
      if (mode === undefined && description === undefined && !addSecret && !removeSecret) {
        throw new UsageError(
          "nothing to change: give --mode, --description, --secret-stdin or --remove-secret",
        );
      }
      const actor = cliActor();
      const origin = originOf(context);
      let updated =
        mode === undefined && description === undefined
          ? null
          : await changeIntegration(
              db,
              actor,
              id,
              {
                ...(mode === undefined ? {} : { mode }),
                ...(description === undefined ? {} : { description: description || null }),
              },
              origin,
            );
      if (addSecret) {
        const secret = await secretFrom(context);
        updated = await addSigningSecret(
          db,
          actor,
          await cliMasterKey(db, context),
          id,
          secret,
          origin,
        );
      }
      if (removeSecret !== undefined) {
        updated = await removeSigningSecret(db, actor, id, removeSecret, origin);
      }
      return { data: updated, text: updated === null ? "" : describe(updated) };
    },
  },
  "integrations events": {
    help: {
      summary: "An integration's latest events, why any was ignored; replay one",
      synopsis: "<id> [--status processed|ignored|waiting] [--replay <event id>]",
      options: [
        ["<id>", "the integration's id"],
        ["--status processed|ignored|waiting", "only these"],
        ["--replay <event id>", "process that ignored or waiting event again"],
      ],
      example: "shipkey integrations events int_01JD8X3V6Q2WHM4KZR7TXN --status ignored",
    },
    run: async (db, args, options) => {
      const id = oneArgument(args, "integration id");
      const replay = stringOption(options, "replay");
      if (replay !== undefined) {
        const event = await replayPaymentEvent(db, cliActor(), id, replay);
        return { data: event, text: describe(event) };
      }
      const given = stringOption(options, "status");
      const status = integrationEventStatuses.find((s) => s === given);
      if (given !== undefined && status === undefined) {
        throw new UsageError(`--status must be one of ${integrationEventStatuses.join(", ")}`);
      }
      const page = await listIntegrationEvents(db, id, {
        limit: pageLimits.default,
        ...(status === undefined ? {} : { status }),
      });
      return {
        data: page.items,
        text: columns(
          page.items.map((e) => ({
            received: e.receivedAt,
            id: e.id,
            type: e.eventType,
            status: e.status,
            reason: e.reason,
          })),
          "No events yet.",
        ),
      };
    },
  },
  "integrations prices": {
    help: {
      summary: "List, map or unmap the provider's prices that sell plans",
      synopsis:
        "<id> [--map <price id> --plan <plan id> [--quantity-means seats|licenses]] [--unmap <price id>]",
      options: [
        ["<id>", "the integration's id"],
        ["--map <price id>", "a price (Stripe, Paddle) or variant (Lemon Squeezy) id to map"],
        ["--plan <plan id>", "the plan it sells (with --map)"],
        ["--quantity-means seats|licenses", "seats (default): one license × quantity slots"],
        ["--unmap <price id>", "stop mapping that price"],
      ],
      example:
        "shipkey integrations prices int_01JD8X3V6Q2WHM4KZR7TXN --map price_1QabcXYZ --plan pln_01JD8X3V6Q2WHM4KZR7TXN",
    },
    run: async (db, args, options) => {
      const id = oneArgument(args, "integration id");
      const map = stringOption(options, "map");
      const unmap = stringOption(options, "unmap");
      const means = stringOption(options, "quantity-means");
      const quantityMeans = quantityMeanings.find((q) => q === (means ?? "seats"));
      if (quantityMeans === undefined) {
        throw new UsageError(`--quantity-means must be one of ${quantityMeanings.join(", ")}`);
      }
      if (map !== undefined) {
        const planId = requiredOption(options, "plan");
        await mapPriceToPlan(db, cliActor(), id, { priceId: map, planId, quantityMeans });
      }
      if (unmap !== undefined) await unmapPrice(db, cliActor(), id, unmap);
      const mappings = await listPriceMappings(db, id);
      return { data: mappings, text: table(mappings, "No prices mapped yet.") };
    },
  },
  "integrations remove": {
    help: {
      summary: "Delete an integration, its secrets and events; licenses stay",
      synopsis: "<id>",
      options: [["<id>", "the integration's id"]],
      example: "shipkey integrations remove int_01JD8X3V6Q2WHM4KZR7TXN",
    },
    run: async (db, args) => {
      const id = oneArgument(args, "integration id");
      await disconnectPaymentProvider(db, cliActor(), id);
      return { data: { deleted: true, id }, text: `Deleted integration ${id}.` };
    },
  },
};
