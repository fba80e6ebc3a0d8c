import { webhooksAllowPrivateFrom } from "../../config.js";
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  rotateWebhookSecret,
  updateWebhookEndpoint,
} from "../../actions/webhooks.js";
import { listWebhookDeliveries } from "../../domain/webhooks/deliveries.js";
import { listWebhookEndpoints } from "../../domain/webhooks/endpoints.js";
import { listOption, requiredOption, stringOption, switchOption, UsageError } from "../args.js";
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
import { pageLimits, webhookEventTypes, webhookLimits } from "../../contracts/vocabulary.js";
import type { EndpointSettings } from "../../domain/webhooks/endpoints.js";

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
      const created = await createWebhookEndpoint(
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
  "webhooks update": {
    help: {
      summary: "Change an endpoint's URL, events, products or enabled flag",
      synopsis:
        "<id> [--url <https url>] [--events <e1,e2>] [--products <slugs>|all] [--description <text>] [--enabled on|off]",
      options: [
        ["<id>", "the endpoint's id, as webhooks list shows it"],
        ["--url <https url>", "where events are POSTed"],
        ["--events <e1,e2>", "the event types it receives (replaces the list)"],
        ["--products <slugs>|all", "only these products' events, or all"],
        ["--description <text>", "what the endpoint is for"],
        ["--enabled on|off", "on also clears the failures that disabled it"],
      ],
      example: "shipkey webhooks update whe_01JD8X3V6Q2WHM4KZR7TXN --enabled on",
    },
    run: async (db, args, options, context) => {
      const id = oneArgument(args, "endpoint id");
      const products = stringOption(options, "products");
      const description = stringOption(options, "description");
      const changes: EndpointSettings = {
        url: stringOption(options, "url"),
        events: listOption(options, "events"),
        products: products === "all" ? null : listOption(options, "products"),
        description: description === "" ? null : description,
        enabled: switchOption(options, "enabled"),
      };
      const given = Object.fromEntries(
        Object.entries(changes).filter(([, value]) => value !== undefined),
      ) as EndpointSettings;
      if (Object.keys(given).length === 0) {
        throw new UsageError(
          "nothing to change: give --url, --events, --products, --description or --enabled",
        );
      }
      const updated = await updateWebhookEndpoint(db, cliActor(), id, given, {
        allowPrivate: webhooksAllowPrivateFrom(context.env),
      });
      return { data: updated, text: describe(endpointRecord(updated)) };
    },
  },
  "webhooks rotate-secret": {
    help: {
      summary: "A new signing secret; the old one also signs for a grace period",
      synopsis: "<id> [--grace-hours <h>]",
      options: [
        ["<id>", "the endpoint's id, as webhooks list shows it"],
        [
          "--grace-hours <h>",
          `hours (0-${webhookLimits.maxGraceSeconds / 3600}) the old secret still signs; ` +
            `default ${webhookLimits.defaultGraceSeconds / 3600}`,
        ],
      ],
      example: "shipkey webhooks rotate-secret whe_01JD8X3V6Q2WHM4KZR7TXN --grace-hours 48",
    },
    run: async (db, args, options, context) => {
      const id = oneArgument(args, "endpoint id");
      const hours = stringOption(options, "grace-hours");
      const maxHours = webhookLimits.maxGraceSeconds / 3600;
      if (hours !== undefined && !(/^\d{1,3}$/.test(hours) && Number(hours) <= maxHours)) {
        throw new UsageError(`--grace-hours must be a whole number from 0 to ${maxHours}`);
      }
      const rotated = await rotateWebhookSecret(
        db,
        cliActor(),
        await cliMasterKey(db, context),
        id,
        hours === undefined ? webhookLimits.defaultGraceSeconds : Number(hours) * 3600,
      );
      return {
        data: rotated,
        text: `${describe(endpointRecord(rotated))}\n\nStore the secret now: it is shown only once.`,
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
      await deleteWebhookEndpoint(db, cliActor(), id);
      return { data: { deleted: true, id }, text: `Deleted webhook endpoint ${id}.` };
    },
  },
};
