import { type ApiKeyView, listApiKeys } from "../../domain/api-keys/api-keys.js";
import { createApiKey, revokeApiKey } from "../../actions/api-keys.js";
import { expiryOption, listOption, requiredOption, UsageError } from "../args.js";
import { cliActor, type Command, describe, noArguments, oneArgument, table } from "./shared.js";

/**
 * An API key for the human output: a key for every product says "all"; its creator is one line
 * (`api key <name> (<id>)`, `admin <email>`, `cli <user@host>`, or `unknown` for a key made before
 * Shipkey recorded it).
 */
function keyRecord(key: ApiKeyView): Record<string, unknown> {
  return { ...key, products: key.products ?? "all", createdBy: creatorText(key.createdBy) };
}

function creatorText(creator: ApiKeyView["createdBy"]): string {
  if (creator === null) return "unknown";
  const kind = creator.type === "api_key" ? "api key" : creator.type;
  return creator.type === "api_key" && creator.id !== null
    ? `${kind} ${creator.label} (${creator.id})`
    : `${kind} ${creator.label}`;
}

export const apiKeyCommands: Record<string, Command> = {
  "api-keys create": {
    help: {
      summary: "Create an API key for the admin API or publish (shown once)",
      synopsis: "--name <name> --scopes <s1,s2> [--expires-at <iso>] [--products <slug1,slug2>]",
      options: [
        ["--name <name>", "what the key is for (required)"],
        [
          "--scopes <s1,s2>",
          "comma-separated scopes, e.g. releases:write,licenses:read (required)",
        ],
        ["--expires-at <iso>", "when the key stops working; default: never"],
        ["--products <slug1,slug2>", "the only products the key reaches; default: all"],
      ],
      example: "shipkey api-keys create --name ci --scopes releases:write --products desktop-app",
    },
    run: async (db, args, options) => {
      noArguments(args);
      const scopes = listOption(options, "scopes");
      if (scopes === undefined) throw new UsageError("--scopes is required");
      const created = await createApiKey(db, cliActor(), {
        name: requiredOption(options, "name"),
        scopes,
        expiresAt: expiryOption(options, false) ?? null,
        products: listOption(options, "products") ?? null,
      });
      return {
        data: created,
        text: `${describe(keyRecord(created))}\n\nStore the key now: it is shown only once.`,
      };
    },
  },
  "api-keys list": {
    help: {
      summary: "List the API keys (never their secrets)",
      synopsis: "",
      options: [],
      example: "shipkey api-keys list",
    },
    run: async (db, args) => {
      noArguments(args);
      const keys = await listApiKeys(db);
      return {
        data: keys,
        text: table(
          keys.map((k) => keyRecord(k)),
          "No API keys yet.",
        ),
      };
    },
  },
  "api-keys revoke": {
    help: {
      summary: "Revoke an API key; it stops working on the next request",
      synopsis: "<id> [--with-created]",
      options: [
        ["<id>", "the key's id, as api-keys list shows it"],
        [
          "--with-created",
          "also revoke the active keys below it: the keys it created, those they created, ...",
        ],
      ],
      example: "shipkey api-keys revoke key_01JD8X3V6Q2WHM4KZR7TXN --with-created",
    },
    run: async (db, args, options) => {
      const withCreated = options["with-created"] === true;
      const { alsoRevoked, ...key } = await revokeApiKey(
        db,
        cliActor(),
        oneArgument(args, "API key id"),
        { withCreated },
      );
      const record = keyRecord(key);
      if (withCreated) record.alsoRevoked = alsoRevoked.length === 0 ? "none" : alsoRevoked;
      return { data: { ...key, alsoRevoked }, text: describe(record) };
    },
  },
};
