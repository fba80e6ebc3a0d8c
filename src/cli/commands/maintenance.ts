import {
  activationHistoryMsFrom,
  webhookRetentionMsFrom,
  emailRetentionMsFrom,
  integrationEventBodyMsFrom,
  databaseUrlFrom,
  masterKeyFromEnv,
} from "../../config.js";
import { migrateToLatest } from "../../db/migrate.js";
import { migrations } from "../../db/migrations/index.js";
import { resealSecrets } from "../../actions/products.js";
import { prune } from "../../domain/maintenance/prune.js";
import { rotateMasterKey } from "../../master-key.js";
import { cliActor, type Command, noArguments } from "./shared.js";

export const maintenanceCommands: Record<string, Command> = {
  migrate: {
    help: {
      summary: "Create the database, or bring its schema up to date",
      synopsis: "",
      options: [],
      example: "DATABASE_URL=postgres://shipkey@db/shipkey shipkey migrate",
    },
    // runCli migrates before every other command; this one migrates and says what it did.
    run: async (db, args, _options, { env }) => {
      noArguments(args);
      const outcome = await migrateToLatest(db);
      const applied = (outcome.results ?? []).filter((r) => r.status === "Success").length;
      const total = Object.keys(migrations).length;
      // Another process may have migrated the fresh database first: then this one created nothing.
      const created = outcome.fresh && applied > 0;
      const database = databaseLabel(databaseUrlFrom(env));
      return {
        data: { migrated: true, created, applied, migrations: total },
        text: created
          ? `Created and migrated ${database} (${total} migrations).`
          : applied > 0
            ? `Migrated ${database}: ${applied} applied (${total} migrations).`
            : `Up to date: ${database} (${total} migrations).`,
      };
    },
  },
  prune: {
    help: {
      summary: "Prune now what the server prunes hourly (ACTIVATION_HISTORY_DAYS)",
      synopsis: "",
      options: [],
      example: "ACTIVATION_HISTORY_DAYS=30 shipkey prune",
    },
    run: async (db, args, _options, { env }) => {
      noArguments(args);
      const counts = await prune(db, {
        activationHistoryMs: activationHistoryMsFrom(env),
        webhookRetentionMs: webhookRetentionMsFrom(env),
        integrationEventBodyMs: integrationEventBodyMsFrom(env),
        emailRetentionMs: emailRetentionMsFrom(env),
      });
      return {
        data: counts,
        text: `Deleted ${counts.activations} ended activations, ${counts.sessions} expired sessions, ${counts.idempotencyKeys} idempotency keys, ${counts.certificates} expired certificate records, ${counts.webhookDeliveries} webhook deliveries, ${counts.integrationEventBodies} payment events' raw bodies and ${counts.emailMessages} e-mail messages.`,
      };
    },
  },
  "master-key rotate": {
    help: {
      summary: "Seal every signing key under a new master key (servers stopped)",
      synopsis: "",
      options: [
        ["SHIPKEY_NEW_MASTER_KEY", "the new key (optional on SQLite without SHIPKEY_MASTER_KEY)"],
      ],
      example: "SHIPKEY_NEW_MASTER_KEY=$(openssl rand -base64 32) shipkey master-key rotate",
    },
    run: async (db, args, _options, { env }) => {
      noArguments(args);
      const rotation = await rotateMasterKey(
        db,
        masterKeyFromEnv(env),
        env.SHIPKEY_NEW_MASTER_KEY,
        databaseUrlFrom(env),
        (from, to) => resealSecrets(db, cliActor(), from, to),
      );
      return {
        data: rotation,
        text:
          rotation.file === null
            ? `${rotation.keys} signing keys, ${rotation.webhookSecrets} webhook secrets and ${rotation.integrationSecrets} integration secrets sealed under SHIPKEY_NEW_MASTER_KEY. Set SHIPKEY_MASTER_KEY to it for every process, then start them.`
            : `${rotation.keys} signing keys, ${rotation.webhookSecrets} webhook secrets and ${rotation.integrationSecrets} integration secrets sealed under a new master key, now in ${rotation.file}. Back it up, then start the service; once it runs, delete the old key, kept in ${rotation.previous}.`,
      };
    },
  },
};

/** DATABASE_URL as migrate names it: a PostgreSQL URL without its password or parameters. */
function databaseLabel(url: string): string {
  if (url.startsWith("sqlite:")) return url;
  const { protocol, username, host, pathname } = new URL(url);
  return `${protocol}//${username === "" ? "" : `${username}@`}${host}${pathname}`;
}
