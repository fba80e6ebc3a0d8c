import { randomBytes } from "node:crypto";
import Fastify, { type FastifyInstance, type FastifyServerOptions, LogController } from "fastify";
import type { Database } from "./db/database.js";
import { LastSeenBuffer } from "./domain/licenses/last-seen.js";
import { UsageCounts } from "./domain/releases/usage-counts.js";
import { ShipkeyError } from "./errors.js";
import { DatabaseFaults } from "./http/database-faults.js";
import {
  clientErrorHandler,
  frameworkErrors,
  registerErrorHandling,
  routeOf,
} from "./http/error-handler.js";
import { dashboard } from "./http/dashboard/dashboard.js";
import { ajvOptions, lazySchemaCompilers } from "./http/schema-compilers.js";
import { registerOpenApi } from "./http/openapi.js";
import { connectRedis, registerRateLimits, type RateLimitSettings } from "./http/rate-limits.js";
import { type PruningOptions, schedulePruning } from "./http/pruning.js";
import { scheduleStatisticsRefresh } from "./http/statistics-refresh.js";
import { registerRoutes } from "./http/routes.js";
import type { CookieSecure } from "./http/cookie-security.js";
import { type MasterKey, masterKeyBytes } from "./domain/signing/key-material.js";
import { defaultKeyRefreshMs, SigningKeyRing } from "./domain/signing/key-ring.js";
import { type WebhookOptions, type WebhookWorker, webhookWorker } from "./http/webhook-delivery.js";
import { emailWorker, type MailOptions, type MailWorker } from "./http/email-delivery.js";
import type { IntegrationOptions } from "./http/routes/integration-webhook.js";
import { retryWaitingPaymentEvents } from "./actions/integration-events.js";
import { scheduleMaintenance } from "./http/maintenance-timer.js";

declare module "fastify" {
  interface FastifyInstance {
    /** Validate's buffered last-seen writes, flushed every second and on close. */
    lastSeen: LastSeenBuffer;
    /** Download and update-check counts, flushed with last-seen. */
    usageCounts: UsageCounts;
    /** COOKIE_SECURE, read by the session cookies (http/cookie-security.ts). */
    cookieSecure: CookieSecure;
    /** The webhook delivery worker (http/webhook-delivery.ts). */
    webhooks: WebhookWorker;
    /** The e-mail outbox's worker (http/email-delivery.ts). */
    mail: MailWorker;
  }
}

// Apps built without a master key (in-process tests) share this one, as the processes of one
// deployment share SHIPKEY_MASTER_KEY. The server always passes its configured key.
const processMasterKey = randomBytes(masterKeyBytes);

/**
 * How often buffered last-seen times and usage counts are written (docs/reference/storage.md: what a
 * crash can lose).
 */
const defaultBufferFlushMs = 1000;

export interface AppOptions {
  database: Database;
  logger?: FastifyServerOptions["logger"];
  /** See config.ts TRUST_PROXY; decides request.ip and whether cookies get Secure. */
  trustProxy?: boolean | string[];
  /** COOKIE_SECURE: "auto" marks session cookies Secure when the request came over HTTPS. */
  cookieSecure?: CookieSecure;
  /** The rate limits; the server passes the configured ones, in-process tests opt in. */
  rateLimits?: RateLimitSettings | "off";
  /** Redis for rate-limit counts shared between processes; without it they are in memory. */
  redisUrl?: string | null;
  /** A whole request must arrive within this many ms, its headers within 10 s at most. */
  requestTimeoutMs?: number;
  /** Prune old rows when ready and hourly (http/pruning.ts); off unless given. */
  pruning?: PruningOptions;
  /** Encrypts the products' private signing keys (server.ts resolves SHIPKEY_MASTER_KEY). */
  masterKey?: MasterKey;
  /** How often the current signing key of a product is re-read (a rotation elsewhere). */
  keyRefreshMs?: number;
  /** The clock of that refresh window (tests advance their own); Date.now unless given. */
  keyClock?: () => number;
  /** PUBLIC_URL's origin: absolute URLs (feeds, download links, snippets) start with it. */
  publicUrl?: string | null;
  /** PostgreSQL: analyze a hot table that changed a lot, checked every this many ms; off unless given. */
  statisticsCheckMs?: number;
  /** Webhook delivery: its policy, clock and timer (the worker runs only when pollMs is given). */
  webhooks?: WebhookOptions;
  /** E-mail: SMTP_URL, MAIL_FROM, clock and timer (the worker runs only when pollMs is given). */
  mail?: MailOptions;
  /** How often buffered last-seen times and usage counts are written; every second unless given. */
  bufferFlushMs?: number;
  /** The payment integrations' webhooks: Paddle's tolerance and the clock (tests). */
  integrations?: IntegrationOptions;
}

/**
 * Builds the HTTP application around an open database. The caller owns the database and may add
 * hooks before the app is started (listen() or inject() make it ready).
 */
export async function buildApp({
  database,
  logger = false,
  trustProxy = false,
  cookieSecure = "auto",
  rateLimits = "off",
  redisUrl = null,
  requestTimeoutMs = 30_000,
  pruning,
  masterKey = processMasterKey,
  keyRefreshMs = defaultKeyRefreshMs,
  keyClock = Date.now,
  publicUrl = null,
  statisticsCheckMs,
  webhooks = {},
  mail = {},
  bufferFlushMs = defaultBufferFlushMs,
  integrations = {},
}: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger,
    trustProxy,
    // Slow clients: the whole request within requestTimeoutMs, headers sooner; checked every
    // second (Node's default is every 30 s).
    requestTimeout: requestTimeoutMs,
    http: {
      headersTimeout: Math.min(requestTimeoutMs, 10_000),
      connectionsCheckingInterval: 1000,
    },
    // Routes set their own limits; this covers anything else.
    bodyLimit: 64 * 1024,
    // A path parameter holds at most an identifier (a machine id in the admin API's license
    // routes: 255 characters); longer is refused before routing.
    routerOptions: { maxParamLength: 256 },
    // Fastify's two info lines per request cost a fifth of validate's CPU time (profiled). One
    // line per request, at debug, replaces them; faults still log at
    // error from the error handler.
    logController: new LogController({ disableRequestLogging: true }),
    frameworkErrors,
    clientErrorHandler,
    ajv: ajvOptions,
    schemaController: { compilersFactory: lazySchemaCompilers() },
  });
  // Registered only when it logs: an async hook per request costs a promise and a microtask
  // turn even when debug() is a no-op (profiled).
  if (app.log.level === "debug" || app.log.level === "trace") {
    app.addHook("onResponse", async (request, reply) => {
      // The route pattern, never the raw URL: paths and query strings may hold license keys
      // and e-mail addresses.
      request.log.debug(
        {
          route: routeOf(request),
          statusCode: reply.statusCode,
          ms: reply.elapsedTime,
        },
        "request completed",
      );
    });
  }
  // Request bodies are only ever JSON; Fastify's default text/plain parser would let a non-JSON
  // body through to the handlers instead of answering 415.
  app.removeContentTypeParser("text/plain");
  // A POST without any Content-Type and without a body never reaches a parser; on the JSON
  // endpoints of the spec, answer it like any other non-JSON request.
  // Callback style, as the other hooks every license request passes through: cheaper than async.
  app.addHook("preValidation", (request, _reply, done) => {
    if (
      request.routeOptions.config.jsonBody === true &&
      request.headers["content-type"] === undefined
    ) {
      done(new ShipkeyError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json"));
      return;
    }
    done();
  });
  app.decorate("cookieSecure", cookieSecure);
  app.decorate("publicUrl", publicUrl);
  const faults = new DatabaseFaults(app.log);
  registerErrorHandling(app, faults);
  const lastSeen = new LastSeenBuffer({
    onDropped: (machines) =>
      app.log.warn(
        { machines },
        "last-seen writes are failing or falling behind: dropped the oldest waiting machines",
      ),
  });
  app.decorate("lastSeen", lastSeen);
  let droppedCountsLogged = 0;
  const usageCounts = new UsageCounts(() => {
    if (Date.now() - droppedCountsLogged < 10_000) return;
    droppedCountsLogged = Date.now();
    app.log.warn("too many distinct usage counters waiting: new ones dropped until the next flush");
  });
  app.decorate("usageCounts", usageCounts);
  const flush = (buffer: LastSeenBuffer | UsageCounts, what: string) =>
    buffer.flush(database.db).catch((err: unknown) => {
      if (!faults.reportIfUnavailable(err, `writing ${what}`))
        app.log.error({ err }, `writing ${what} failed; will retry`);
    });
  const flushBuffers = () =>
    Promise.all([flush(lastSeen, "last-seen times"), flush(usageCounts, "usage counts")]);
  const timer = setInterval(() => void flushBuffers(), bufferFlushMs);
  timer.unref();
  // Runs after in-flight requests finished and before the caller closes the database.
  app.addHook("onClose", async () => {
    clearInterval(timer);
    // After a flush in progress, writes the rest; again while a failed write put entries back,
    // bounded, in case the database keeps failing.
    await flushBuffers();
    for (let attempt = 0; attempt < 3 && lastSeen.size + usageCounts.size > 0; attempt++) {
      await flushBuffers();
    }
  });

  if (pruning) schedulePruning(app, database.db, faults, pruning);
  if (integrations.retryEveryMs !== undefined) {
    scheduleMaintenance(
      app,
      faults,
      "retrying waiting payment events",
      { everyMs: integrations.retryEveryMs, onReady: true },
      async () => void (await retryWaitingPaymentEvents(database.db)),
    );
  }
  if (statisticsCheckMs !== undefined && database.dialect === "postgres") {
    scheduleStatisticsRefresh(app, database.db, faults, statisticsCheckMs);
  }

  const webhookDelivery = webhookWorker(app, database.db, faults, masterKey, webhooks);
  app.decorate("webhooks", webhookDelivery);
  const mailDelivery = emailWorker(app, database.db, faults, mail);
  app.decorate("mail", mailDelivery);

  // Routes go in a plugin registered after the OpenAPI plugin, so it sees every one of them.
  await registerOpenApi(app);
  app.decorateRequest("adminSession", null);
  app.decorateReply("loginCsrf", "");
  const signing = {
    masterKey,
    ring: new SigningKeyRing(database.db, masterKey, { refreshMs: keyRefreshMs, now: keyClock }),
  };
  await app.register(async (instance) =>
    dashboard(instance, database.db, faults, signing, webhookDelivery, mailDelivery),
  );
  const redis =
    rateLimits !== "off" && redisUrl !== null ? await connectRedis(redisUrl, app.log) : null;
  if (redis) app.addHook("onClose", async () => void (await redis.quit().catch(() => "")));
  const limits = rateLimits === "off" ? null : await registerRateLimits(app, rateLimits, redis);
  await app.register(async (instance) =>
    registerRoutes(instance, database.db, {
      lastSeen,
      counts: usageCounts,
      faults,
      limits,
      signing,
      webhooks: webhookDelivery,
      mail: mailDelivery,
      integrations,
    }),
  );
  return app;
}
