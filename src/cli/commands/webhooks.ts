import { webhooksAllowPrivateFrom } from "../../config.js";
import {
  createWebhookEndpointAudited,
  deleteWebhookEndpointAudited,
} from "../../domain/audit/audited-actions.js";
import { listWebhookDeliveries } from "../../domain/webhooks/deliveries.js";
import { listWebhookEndpoints } from "../../domain/webhooks/endpoints.js";
import { listOption, requiredOption, stringOption, UsageError } from "../args.js";
import {
  cliActor,
  cliMasterKey,
  columns,
  type Command,
  describe,
  noArguments,
  oneArgument,
  table,
} from "./shared.js";
import { pageLimits, webhookEventTypes } from "../../contracts/vocabulary.js";

/** An endpoint for the human output: one for every product says "all". */
function endpointRecord(endpoint: { products: string[] | null }): Record<string, unknown> {
  return { ...endpoint, products: endpoint.products ?? "all" };
}

export const webhookCommands: Record<string, Command> = {
  "webhooks create": {
    help: {
      summary: "Create a webhook endpoint; its signing secret is shown once",
      synopsis:
        "--url <https url> --events <e1,e2> [--products <slug1,slug2>] [--description <text>]",
      options: [
        ["--url <https url>", "where events are POSTed; https (required)"],
        ["--events <e1,e2>", `event types, e.g. machine.activated,license.created (required)`],
        ["--products <slug1,slug2>", "only these products' events; default: all"],
        ["--description <text>", "what the endpoint is for"],
      ],
      example:
        "shipkey webhooks create --url https://crm.example.com/hooks --events license.created,activation.refused",
    },
    run: async (db, args, options, context) => {
      noArguments(args);
      const events = listOption(options, "events");
      if (events === undefined) {
        throw new UsageError(`--events is required: some of ${webhookEventTypes.join(", ")}`);
      }
      const created = await createWebhookEndpointAudited(
        db,
        cliActor(),
        await cliMasterKey(db, context),
        {
          url: requiredOption(options, "url"),
          events,
          products: listOption(options, "products") ?? null,
          description: stringOption(options, "description") ?? null,
        },
        { allowPrivate: webhooksAllowPrivateFrom(context.env) },
      );
      return {
        data: created,
        text: `${describe(endpointRecord(created))}\n\nStore the secret now: it is shown only once.`,
      };
    },
  },
  "webhooks list": {
    help: {
      summary: "List the webhook endpoints (never their secrets)",
      synopsis: "",
      options: [],
      example: "shipkey webhooks list",
    },
    run: async (db, args) => {
      noArguments(args);
      const endpoints = await listWebhookEndpoints(db);
      return {
        data: endpoints,
        text: table(endpoints.map(endpointRecord), "No webhook endpoints yet."),
      };
    },
  },
  "webhooks deliveries": {
    help: {
      summary: "An endpoint's latest deliveries, with status and response",
      synopsis: "<id>",
      options: [["<id>", "the endpoint's id, as webhooks list shows it"]],
      example: "shipkey webhooks deliveries whe_01JD8X3V6Q2WHM4KZR7TXN",
    },
    run: async (db, args) => {
      const page = await listWebhookDeliveries(db, oneArgument(args, "endpoint id"), {
        limit: pageLimits.default,
      });
      return {
        data: page.items,
        text: columns(
          page.items.map((d) => ({
            created: d.createdAt,
            event: d.eventType,
            id: d.eventId,
            status: d.status,
            response: d.responseStatus ?? d.lastError,
            ms: d.durationMs,
            attempts: d.attempts,
          })),
          "No deliveries yet.",
        ),
      };
    },
  },
  "webhooks remove": {
    help: {
      summary: "Delete a webhook endpoint and its deliveries",
      synopsis: "<id>",
      options: [["<id>", "the endpoint's id, as webhooks list shows it"]],
      example: "shipkey webhooks remove whe_01JD8X3V6Q2WHM4KZR7TXN",
    },
    run: async (db, args) => {
      const id = oneArgument(args, "endpoint id");
      await deleteWebhookEndpointAudited(db, cliActor(), id);
      return { data: { deleted: true, id }, text: `Deleted webhook endpoint ${id}.` };
    },
  },
};
