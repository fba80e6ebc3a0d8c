import rateLimit, { normalizeIP } from "@fastify/rate-limit";
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onErrorAsyncHookHandler,
  onRequestAsyncHookHandler,
  onRequestHookHandler,
  onSendHookHandler,
  preParsingAsyncHookHandler,
} from "fastify";
import type { Redis } from "ioredis";
import { ShipkeyError } from "../errors.js";
import { rateLimitStore } from "./rate-limit-store.js";

export type RateLimitName = "license" | "updates" | "unknownKey" | "publish" | "admin";
export interface RateLimit {
  max: number;
  windowMs: number;
}
export type RateLimitSettings = Record<RateLimitName, RateLimit>;

/** The defaults; README.md has the table, config.ts the environment variables. */
export const defaultRateLimits: RateLimitSettings = {
  // Per client address. A site of a few thousand installs behind one NAT, validating hourly,
  // stays far below it; a burst of re-activations after a fleet redeploy too.
  license: { max: 300, windowMs: 60_000 },
  // Per client address: the update feeds, downloads and signing keys. Updaters check at start and
  // every few hours; the same NAT reasoning as the license endpoints.
  updates: { max: 300, windowMs: 60_000 },
  // Per client address: requests naming a license key or API key that does not exist. Past it,
  // the address gets 429 on every license, publish and admin API request until the window ends,
  // so a guessed key cannot be told apart from a wrong one.
  unknownKey: { max: 20, windowMs: 15 * 60_000 },
  // Per API key.
  publish: { max: 60, windowMs: 60_000 },
  // Per API key or signed-in admin.
  admin: { max: 300, windowMs: 60_000 },
};

/** Addresses remembered as having spent their unknown-key budget, oldest forgotten first. */
const maxSpentAddresses = 20_000;

/** The policy names of the RateLimit-Policy / RateLimit headers (IETF draft). */
const policyNames: Record<RateLimitName, string> = {
  license: "license",
  updates: "updates",
  unknownKey: "unknown-key",
  publish: "publish",
  admin: "admin",
};

export interface RateLimitHooks {
  /**
   * License endpoints ("license") and the update feeds and downloads ("updates"), onRequest: the
   * address's request and unknown-key budgets.
   */
  perAddress(name: "license" | "updates"): onRequestAsyncHookHandler;
  /**
   * Publish and the admin API, onRequest and onSend: an address that spent its unknown-key
   * budget gets 429 for a request whose credentials fail (401). A request with a valid API key
   * or session is never refused for its address's budget: a neighbour behind the same address
   * cannot lock CI out, and API keys and sessions are far too long to guess.
   */
  unknownKeyBudget: { onRequest: onRequestHookHandler; onSend: onSendHookHandler };
  /** onError: a request naming an unknown license key or API key spends the address's budget. */
  countUnknownKey: onErrorAsyncHookHandler;
  /** Publish and the admin API, preParsing (after authentication): the caller's budget. */
  perCaller(name: "publish" | "admin"): preParsingAsyncHookHandler;
}

type Limiter = ReturnType<FastifyInstance["createRateLimit"]>;

declare module "fastify" {
  interface FastifyRequest {
    /** Publish and the admin API: the address had spent its unknown-key budget at arrival. */
    unknownKeyBudgetSpent: boolean;
  }
}

/**
 * Registers @fastify/rate-limit with counts in Redis when one is given (several processes then
 * enforce one limit), else in this process, and returns the hooks the routes use. While Redis
 * cannot be reached, each process counts on its own (rate-limit-store.ts) and says so in the log
 * at most once every 10 s; it counts in Redis again as soon as Redis answers.
 */
export async function registerRateLimits(
  app: FastifyInstance,
  settings: RateLimitSettings,
  redis: Redis | null,
): Promise<RateLimitHooks> {
  app.decorateRequest("unknownKeyBudgetSpent", false);
  let lastReport = 0;
  const store = rateLimitStore(redis, (reason) => {
    if (Date.now() - lastReport < 10_000) return;
    lastReport = Date.now();
    app.log.warn({ reason }, "Redis for rate limits unavailable: each process counts on its own");
  });
  await app.register(rateLimit, { global: false, skipOnError: true, store });
  const limiter = (name: RateLimitName, key: (request: FastifyRequest) => string): Limiter => {
    const options = {
      max: settings[name].max,
      timeWindow: settings[name].windowMs,
      keyGenerator: (request: FastifyRequest) => `${name}|${key(request)}`,
      // Distinct keys kept in memory per limit, least recently used evicted first.
      cache: 20_000,
    };
    return app.createRateLimit(options);
  };
  const address = (request: FastifyRequest) => normalizeIP(request.ip ?? "");
  const caller = (request: FastifyRequest) =>
    request.actor ? `${request.actor.type}:${request.actor.id}` : `address:${address(request)}`;

  const perAddressLimits = {
    license: limiter("license", address),
    updates: limiter("updates", address),
  };
  const unknownKey = limiter("unknownKey", address);
  const callers = { publish: limiter("publish", caller), admin: limiter("admin", caller) };

  // Addresses whose unknown-key budget is spent, and until when (epoch ms). The count itself is
  // the limiter's (shared in Redis); this copy spares every request a second lookup. Another
  // process learns of a spent budget at the address's next unknown key.
  const spentUntil = new Map<string, number>();
  /** Seconds until the address's spent unknown-key budget renews; 0 while it is not spent. */
  const spentSeconds = (request: FastifyRequest): number => {
    const client = address(request);
    const until = spentUntil.get(client);
    if (until === undefined) return 0;
    const seconds = Math.ceil((until - Date.now()) / 1000);
    if (seconds <= 0) spentUntil.delete(client);
    return Math.max(0, seconds);
  };
  const describeSpent = (reply: FastifyReply, seconds: number) => {
    const { max, windowMs } = settings.unknownKey;
    describeLimit(reply, "unknownKey", {
      max,
      timeWindow: windowMs,
      remaining: 0,
      ttlInSeconds: seconds,
    });
  };
  const refuseIfGuessing = (request: FastifyRequest, reply: FastifyReply) => {
    const seconds = spentSeconds(request);
    if (seconds === 0) return;
    describeSpent(reply, seconds);
    throw tooManyRequests(reply, seconds);
  };

  return {
    perAddress: (name) => async (request, reply) => {
      refuseIfGuessing(request, reply);
      const requests = await perAddressLimits[name](request);
      // Only a refusal describes the limit: an app's answers stay as small as the spec's.
      if (requests.isAllowed || !requests.isExceeded) return;
      describeLimit(reply, name, requests);
      throw tooManyRequests(reply, requests.ttlInSeconds);
    },
    unknownKeyBudget: {
      // Looked up before the request runs, so the guess that spends the budget still gets 401.
      onRequest: (request, _reply, done) => {
        request.unknownKeyBudgetSpent = spentSeconds(request) > 0;
        done();
      },
      onSend: (request, reply, payload, done) => {
        const seconds = request.unknownKeyBudgetSpent ? spentSeconds(request) : 0;
        if (reply.statusCode !== 401 || seconds === 0) {
          done(null, payload);
          return;
        }
        describeSpent(reply, seconds);
        const refusal = tooManyRequests(reply, seconds);
        reply.code(429);
        done(null, JSON.stringify({ error: refusal.message, code: refusal.code }));
      },
    },
    countUnknownKey: async (request, _reply, error) => {
      if (
        !(error instanceof ShipkeyError) ||
        (error.code !== "LICENSE_NOT_FOUND" &&
          error.code !== "UPDATES_LICENSE_NOT_FOUND" &&
          error.code !== "INVALID_API_KEY")
      ) {
        return;
      }
      const guesses = await unknownKey(request);
      if (guesses.isAllowed || guesses.remaining > 0) return;
      if (spentUntil.size >= maxSpentAddresses) {
        const oldest = spentUntil.keys().next().value;
        if (oldest !== undefined) spentUntil.delete(oldest);
      }
      spentUntil.set(address(request), Date.now() + Math.max(1000, guesses.ttl));
    },
    perCaller: (name) => async (request, reply, payload) => {
      const state = await callers[name](request);
      if (state.isAllowed) return payload;
      describeLimit(reply, name, state);
      if (state.isExceeded) throw tooManyRequests(reply, state.ttlInSeconds);
      return payload;
    },
  };
}

/** `RateLimit-Policy: "license";q=300;w=60` and `RateLimit: "license";r=299;t=60`. */
function describeLimit(
  reply: FastifyReply,
  name: RateLimitName,
  state: { max: number; timeWindow: number; remaining: number; ttlInSeconds: number },
): void {
  const policy = `"${policyNames[name]}"`;
  reply.header(
    "ratelimit-policy",
    `${policy};q=${state.max};w=${Math.ceil(state.timeWindow / 1000)}`,
  );
  reply.header("ratelimit", `${policy};r=${state.remaining};t=${state.ttlInSeconds}`);
}

/** The refusal, with the seconds to wait in Retry-After. */
function tooManyRequests(reply: FastifyReply, seconds: number): ShipkeyError {
  reply.header("retry-after", String(Math.max(1, seconds)));
  return new ShipkeyError("RATE_LIMITED", "Too many requests");
}

/**
 * A Redis client for the shared counts. Commands fail at once while the connection is down
 * (no offline queue) and after 1 s without an answer, so a Redis outage costs requests no time
 * (each process counts on its own meanwhile); the client reconnects by itself. Errors are logged
 * at most once per 10 s. ioredis is loaded only when a Redis URL is set.
 */
export async function connectRedis(url: string, log: FastifyInstance["log"]): Promise<Redis> {
  const { Redis } = await import("ioredis");
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 1000,
    connectTimeout: 5000,
  });
  let lastReport = 0;
  client.on("error", (err: Error) => {
    if (Date.now() - lastReport < 10_000) return;
    lastReport = Date.now();
    log.warn(
      { reason: err.message },
      "Redis for rate limits unavailable: each process counts on its own",
    );
  });
  return client;
}
