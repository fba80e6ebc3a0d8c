import { sql } from "kysely";
import { buildApp } from "./app.js";
import { ConfigError, loadConfig } from "./config.js";
import { type Database, DatabaseUrlError, openDatabase } from "./db/database.js";
import { migrateToLatest } from "./db/migrate.js";
import { removeValueSamples } from "./db/sqlite-statistics.js";
import { countAdmins } from "./domain/admins/admins.js";
import { boundHeapGrowth } from "./lib/heap-growth.js";

/**
 * Process concerns only: configuration, logging, migrations at start, graceful shutdown.
 * The application itself is built by app.ts so tests can run it in-process.
 */
async function main(): Promise<void> {
  boundHeapGrowth();
  const config = loadConfig();
  // Background database work (SQLite checkpoints) reports here; the app's logger once it exists.
  let reportBackgroundError = (message: string): void => {
    process.stderr.write(`shipkey: ${message}\n`);
  };
  const database = await openAndMigrate(config.databaseUrl, (message) =>
    reportBackgroundError(message),
  );
  const app = await buildApp({
    database,
    trustProxy: config.trustProxy,
    logger: {
      level: config.logLevel,
      // Belt and braces: request logs carry no headers today, and must never carry keys.
      redact: ["req.headers.authorization", "req.headers.cookie"],
    },
  });

  reportBackgroundError = (message) => app.log.error(message);

  let shuttingDown = false;
  // Responses sent while draining tell keep-alive clients to hang up, so close() does not wait
  // for their idle connections to time out.
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (shuttingDown) reply.header("connection", "close");
    done(null, payload);
  });
  const shutdown = async (signal: NodeJS.Signals): Promise<void> => {
    if (shuttingDown) return;
    shuttingDown = true;
    app.log.info({ signal }, "shutting down: finishing in-flight requests");
    try {
      await app.close(); // stops accepting, waits for in-flight requests
      await database.close();
      process.exit(0);
    } catch (err) {
      app.log.error({ err }, "error during shutdown");
      process.exit(1);
    }
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);

  await removeValueSamples(database.db).then(
    (result) => {
      if (result === "removed") {
        app.log.warn(
          "Removed ANALYZE's value samples (sqlite_stat4): with them SQLite re-plans every statement on an indexed column, license reads included, on every request (docs/decisions.md §9)",
        );
      }
    },
    (err: unknown) =>
      app.log.warn(
        `Could not remove ANALYZE's value samples (sqlite_stat4); license reads stay several times slower until they are removed and the server restarted (DELETE FROM sqlite_stat4; docs/decisions.md §9): ${err instanceof Error ? err.message : String(err)}`,
      ),
  );

  if ((await countAdmins(database.db)) === 0) {
    app.log.warn(
      "No admin account yet: create one with `npx shipkey admins create --email you@example.com`, then sign in at /admin",
    );
  }

  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    await database.close();
    throw new ConfigError(
      `cannot listen on ${config.host}:${config.port}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

async function openAndMigrate(
  url: string,
  onBackgroundError: (message: string) => void,
): Promise<Database> {
  let database: Database;
  try {
    database = await openDatabase(url, { backgroundWorker: { onError: onBackgroundError } });
    await sql`select 1`.execute(database.db);
  } catch (err) {
    if (err instanceof DatabaseUrlError) throw err;
    throw new ConfigError(
      `cannot open the database: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  try {
    await migrateToLatest(database.db);
  } catch (err) {
    await database.close();
    throw err;
  }
  return database;
}

main().catch((err: unknown) => {
  // One clear line, no stack trace: these are configuration or environment problems.
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`shipkey: ${message}\n`);
  process.exit(1);
});
