import pino from "pino";
import { buildApp } from "./app.js";
import { type Config, ConfigError, loadConfig, redactSmtpUrl } from "./config.js";
import { type Database, DatabaseUrlError, openDatabase, waitForDatabase } from "./db/database.js";
import { migrateToLatest } from "./db/migrate.js";
import { analyzeHotTables, statisticsCheckMs } from "./db/statistics.js";
import { countAdmins } from "./domain/admins/admins.js";
import { insecureCookieWarning } from "./http/cookie-security.js";
import { boundHeapGrowth } from "./lib/heap-growth.js";
import { type Heartbeat, startHeartbeat } from "./domain/maintenance/service-processes.js";
import type { MasterKey } from "./domain/signing/key-material.js";
import { ensureAllSigningKeys } from "./domain/signing/signing-keys.js";
import { assertMasterKeyConfigured, resolveVerifiedMasterKey } from "./master-key.js";

/**
 * Process concerns only: configuration, logging, migrations at start, graceful shutdown.
 * The application itself is built by app.ts so tests can run it in-process.
 */
async function main(): Promise<void> {
  boundHeapGrowth();
  const config = loadConfig();
  const log = pino({ level: config.logLevel });
  assertMasterKeyConfigured(config.masterKey, config.databaseUrl);
  const database = await openAndMigrate(config, log);
  const heartbeat = await startServiceHeartbeat(database, log);
  const masterKey = await prepareSigningKeys(database, config, heartbeat, log);
  const app = await buildApp({
    database,
    trustProxy: config.trustProxy,
    cookieSecure: config.cookieSecure,
    rateLimits: config.rateLimits,
    redisUrl: config.redisUrl,
    publicUrl: config.publicUrl,
    statisticsCheckMs,
    requestTimeoutMs: config.requestTimeoutMs,
    pruning: {
      activationHistoryMs: config.activationHistoryMs,
      webhookRetentionMs: config.webhookRetentionMs,
      integrationEventBodyMs: config.integrationEventBodyMs,
      emailRetentionMs: config.emailRetentionMs,
    },
    integrations: { paddleToleranceSeconds: config.paddleToleranceSeconds, retryEveryMs: 60_000 },
    webhooks: {
      allowPrivate: config.webhooksAllowPrivate,
      disableAfterFailures: config.webhooksDisableAfterFailures,
      pollMs: 1000,
    },
    mail: { smtpUrl: config.smtpUrl, from: config.mailFrom ?? "", pollMs: 1000 },
    masterKey,
    logger: {
      level: config.logLevel,
      // Belt and braces: request logs carry no headers today, and must never carry keys.
      redact: ["req.headers.authorization", "req.headers.cookie"],
    },
  });

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
    // Past the grace period, requests still running (or clients still sending) lose their
    // connections, and the close completes.
    // Close hooks (the last-seen flush, a pruning run) get a few seconds more; a database that
    // hangs cannot keep the process alive past that.
    const grace = setTimeout(() => {
      app.log.warn("shutdown grace period over: closing the remaining connections");
      app.server.closeAllConnections();
      setTimeout(() => {
        app.log.error("shutdown still waiting on the database: exiting");
        process.exit(0);
      }, closeHooksGraceMs).unref();
    }, config.shutdownGraceMs);
    try {
      await app.close(); // stops accepting, waits for in-flight requests
      clearTimeout(grace);
      await heartbeat
        .stop()
        .catch((err: unknown) =>
          app.log.warn({ reason: messageOf(err) }, "cannot remove the service heartbeat"),
        );
      await database.close();
      process.exit(0);
    } catch (err) {
      app.log.error({ err }, "error during shutdown");
      process.exit(1);
    }
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);

  const cookieWarning = insecureCookieWarning(config.cookieSecure, config.trustProxy);
  if (cookieWarning) app.log.warn(cookieWarning);
  if (config.rateLimits === "off") app.log.warn("RATE_LIMITS=off: no request is rate limited");
  const urlWarning = await publicUrlWarning(database.db, config);
  if (urlWarning) app.log.warn(urlWarning);
  await logMailSetting(database.db, config, app.log);

  if ((await countAdmins(database.db)) === 0) {
    app.log.warn(
      "No admin account yet: create one with `npx shipkey admins create --email you@example.com`, then sign in at /admin",
    );
  }

  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    await heartbeat.stop().catch(() => undefined);
    await database.close();
    throw new ConfigError(
      `cannot listen on ${config.host}:${config.port}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

/**
 * Opens the database, waiting up to DATABASE_CONNECT_TIMEOUT for one that does not answer yet
 * (a PostgreSQL server still starting), migrates it, and gives the planner statistics where a
 * hot table has rows but none.
 */
async function openAndMigrate(config: Config, log: pino.Logger): Promise<Database> {
  let database: Database;
  try {
    database = await openDatabase(config.databaseUrl, {
      poolSize: config.databasePoolSize,
      backgroundCheckpoints: { onError: (message) => log.error(message) },
    });
  } catch (err) {
    if (err instanceof DatabaseUrlError) throw err;
    throw new ConfigError(`cannot open the database: ${messageOf(err)}`);
  }
  try {
    await waitForDatabase(database, config.databaseConnectTimeoutMs, (err, attempt) =>
      log.warn({ attempt, reason: messageOf(err) }, "database not reachable yet; retrying"),
    );
  } catch (err) {
    await database.close();
    throw new ConfigError(`cannot reach the database: ${messageOf(err)}`);
  }
  try {
    await migrateToLatest(database.db);
    const analyzed = await analyzeHotTables(database.db);
    if (analyzed.length > 0) log.info({ tables: analyzed }, "gathered planner statistics");
  } catch (err) {
    await database.close();
    throw err;
  }
  return database;
}

/**
 * This server's row in service_processes, written before the master key is verified and then
 * every 10 s (`shipkey master-key rotate` refuses while it is fresh); removed on shutdown.
 */
async function startServiceHeartbeat(database: Database, log: pino.Logger): Promise<Heartbeat> {
  try {
    return await startHeartbeat(database.db, (err) =>
      log.warn({ reason: messageOf(err) }, "cannot write the service heartbeat; retrying"),
    );
  } catch (err) {
    await database.close();
    throw err;
  }
}

/**
 * The master key, proven to be this database's before anything is signed or sealed: it must
 * open every stored signing key (current, next and retired; the error names the kid) and the
 * key-check value (written now on a database without one). Then every product without a signing
 * key gets one.
 */
async function prepareSigningKeys(
  database: Database,
  config: Config,
  heartbeat: Heartbeat,
  log: pino.Logger,
): Promise<MasterKey> {
  try {
    const { key, createdFile } = await resolveVerifiedMasterKey(
      config.masterKey,
      config.databaseUrl,
      database.db,
    );
    if (createdFile) {
      log.warn(
        { file: createdFile },
        `created the master key file ${createdFile}: back it up with the database (a backup restored without it cannot sign), and keep the copies apart`,
      );
    }
    const created = await ensureAllSigningKeys(database.db, key);
    if (created > 0) log.info({ products: created }, "generated signing keys");
    return key;
  } catch (err) {
    await heartbeat.stop().catch(() => undefined);
    await database.close();
    throw err;
  }
}

/**
 * Feeds that hand out the download redirect, or carry a license in Sparkle's URLs, build their
 * URLs from the request unless PUBLIC_URL is set: behind a TLS proxy without TRUST_PROXY they
 * would say http://. Warn when that can happen.
 */
async function publicUrlWarning(db: Database["db"], config: Config): Promise<string | null> {
  if (config.publicUrl !== null || config.trustProxy !== false) return null;
  const product = await db
    .selectFrom("products")
    .select("slug")
    .where((eb) => eb.or([eb("download_redirects", "=", 1), eb("updates_require_license", "=", 1)]))
    .executeTakeFirst()
    .catch(() => undefined);
  return product
    ? `product ${product.slug} uses download redirects or licensed updates, and neither PUBLIC_URL nor TRUST_PROXY is set: feed URLs follow each request's Host and protocol (behind a TLS proxy they would say http://). Set PUBLIC_URL to the address clients use`
    : null;
}

/**
 * Once at start: where e-mail goes (SMTP_URL without its password), or, without SMTP_URL, a
 * warning that messages wait in the outbox (how many wait now).
 */
async function logMailSetting(
  db: Database["db"],
  config: Config,
  log: { info(o: object, m: string): void; warn(o: object, m: string): void },
): Promise<void> {
  if (config.smtpUrl !== null) {
    log.info({ smtp: redactSmtpUrl(config.smtpUrl), from: config.mailFrom }, "sending e-mail");
    return;
  }
  const waiting = await db
    .selectFrom("email_messages")
    .select((eb) => eb.fn.countAll<number>().as("count"))
    .where("state", "in", ["pending", "sending"])
    .executeTakeFirst()
    .catch(() => undefined);
  log.warn(
    { waiting: Number(waiting?.count ?? 0) },
    "SMTP_URL is not set: e-mail waits in the outbox, pending, and is sent once SMTP_URL and MAIL_FROM are set (docs/email.md)",
  );
}

/** After SHUTDOWN_GRACE, how long close hooks may still run before the process exits anyway. */
const closeHooksGraceMs = 5000;

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

main().catch((err: unknown) => {
  // One clear line, no stack trace: these are configuration or environment problems.
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`shipkey: ${message}\n`);
  process.exit(1);
});
