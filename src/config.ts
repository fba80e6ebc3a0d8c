import { parseDatabaseUrl } from "./db/database.js";
import { type CookieSecure, cookieSecureModes } from "./http/cookie-security.js";
import {
  isRepeatedByteKey,
  type MasterKey,
  parseMasterKey,
} from "./domain/signing/key-material.js";
import {
  defaultRateLimits,
  type RateLimitName,
  type RateLimitSettings,
} from "./http/rate-limits.js";
import { integrationLimits } from "./contracts/vocabulary.js";

export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  logLevel: LogLevel;
  /** Fastify trustProxy: false, true, or addresses/CIDRs of the proxies. */
  trustProxy: boolean | string[];
  /** PostgreSQL connections per process. */
  databasePoolSize: number;
  /** How long the start waits for an unreachable database, in ms. */
  databaseConnectTimeoutMs: number;
  /** A whole request must arrive within this many ms, and its headers within 10 s at most. */
  requestTimeoutMs: number;
  /** On SIGTERM, how long in-flight requests may run before their connections are closed. */
  shutdownGraceMs: number;
  /** Whether session cookies carry Secure: by the request's protocol, always or never. */
  cookieSecure: CookieSecure;
  /** The limits, or "off" (RATE_LIMITS=off). */
  rateLimits: RateLimitSettings | "off";
  /** Redis holding the rate-limit counts shared by several processes; null keeps them in memory. */
  redisUrl: string | null;
  /** How long ended activations are kept, in ms; 0 keeps none. */
  activationHistoryMs: number;
  /** SHIPKEY_MASTER_KEY; null when unset (SQLite then keeps one beside the database). */
  masterKey: MasterKey | null;
  /** PUBLIC_URL's origin: every absolute URL the service writes starts with it; null: the request's. */
  publicUrl: string | null;
  /** WEBHOOKS_ALLOW_PRIVATE: webhooks may go to http URLs and private addresses. */
  webhooksAllowPrivate: boolean;
  /** How long finished webhook deliveries (and their payloads) are kept, in ms. */
  webhookRetentionMs: number;
  /** Consecutive failed attempts (over at least a day) that disable a webhook endpoint. */
  webhooksDisableAfterFailures: number;
  /** SMTP_URL: where e-mail goes (credentials inside: never logged); null: it waits in the outbox. */
  smtpUrl: string | null;
  /** MAIL_FROM: the From of every message. */
  mailFrom: string | null;
  /** How long the raw bodies of payment providers' events are kept, in ms. */
  integrationEventBodyMs: number;
  /** How long sent and failed e-mail messages are kept, in ms. */
  emailRetentionMs: number;
  /** How far a Paddle-Signature's ts may be from now, in seconds. */
  paddleToleranceSeconds: number;
}

const logLevels = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof logLevels)[number];

export const defaultDatabaseUrl = "sqlite:./data/shipkey.db";

/** A configuration problem, reported at start as one line. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = env.PORT === undefined || env.PORT === "" ? 3000 : Number(env.PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535 || !/^\d+$/.test(env.PORT ?? "3000")) {
    throw new ConfigError(`PORT must be an integer from 0 to 65535, got "${env.PORT}"`);
  }
  const host = env.HOST === undefined || env.HOST === "" ? "0.0.0.0" : env.HOST;
  const databaseUrl = databaseUrlFrom(env);
  const logLevel = oneOf(env, "LOG_LEVEL", logLevels, "info");
  return {
    port,
    host,
    databaseUrl,
    logLevel,
    trustProxy: trustProxyFrom(env.TRUST_PROXY),
    databasePoolSize: integerFrom(env, "DATABASE_POOL_SIZE", 10, 1, 1000),
    databaseConnectTimeoutMs: integerFrom(env, "DATABASE_CONNECT_TIMEOUT", 30, 0, 3600) * 1000,
    requestTimeoutMs: integerFrom(env, "REQUEST_TIMEOUT", 30, 1, 3600) * 1000,
    shutdownGraceMs: integerFrom(env, "SHUTDOWN_GRACE", 10, 0, 3600) * 1000,
    cookieSecure: oneOf(env, "COOKIE_SECURE", cookieSecureModes, "auto"),
    rateLimits: rateLimitsFrom(env),
    redisUrl: redisUrlFrom(env.REDIS_URL),
    activationHistoryMs: activationHistoryMsFrom(env),
    masterKey: masterKeyFromEnv(env),
    publicUrl: publicUrlFrom(env.PUBLIC_URL),
    webhooksAllowPrivate: webhooksAllowPrivateFrom(env),
    webhookRetentionMs: webhookRetentionMsFrom(env),
    webhooksDisableAfterFailures: integerFrom(env, "WEBHOOKS_DISABLE_AFTER", 50, 1, 100_000),
    ...mailFrom(env),
    integrationEventBodyMs: integrationEventBodyMsFrom(env),
    emailRetentionMs: emailRetentionMsFrom(env),
    paddleToleranceSeconds: integerFrom(
      env,
      "PADDLE_SIGNATURE_TOLERANCE",
      integrationLimits.defaultPaddleToleranceSeconds,
      1,
      integrationLimits.maxPaddleToleranceSeconds,
    ),
  };
}

/**
 * SMTP_URL and MAIL_FROM. SMTP_URL is nodemailer's connection URL: smtp://user:pass@host:587
 * (STARTTLS when the server offers it) or smtps://user:pass@host:465; a message never quotes it,
 * as it holds the password. MAIL_FROM is required with it: an address, or `Name <address>`.
 */
export function mailFrom(env: NodeJS.ProcessEnv = process.env): {
  smtpUrl: string | null;
  mailFrom: string | null;
} {
  const urlText = env.SMTP_URL ?? "";
  const from = (env.MAIL_FROM ?? "").trim();
  if (from !== "" && !isMailbox(from)) {
    throw new ConfigError(
      `MAIL_FROM must be an address or "Name <address>", such as "Acme <licenses@acme.example>", got "${from}"`,
    );
  }
  if (urlText === "") return { smtpUrl: null, mailFrom: from === "" ? null : from };
  let url: URL | null;
  try {
    url = new URL(urlText);
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== "smtp:" && url.protocol !== "smtps:") || url.hostname === "") {
    throw new ConfigError(
      "SMTP_URL must be an smtp:// or smtps:// URL such as smtps://user:password@smtp.example.com:465 (its value is not shown: it may hold a password)",
    );
  }
  if (from === "") {
    throw new ConfigError("MAIL_FROM must be set when SMTP_URL is: the From of every message");
  }
  return { smtpUrl: urlText, mailFrom: from };
}

/** An address, or a display name and an address in angle brackets; one line. */
function isMailbox(text: string): boolean {
  const address = /^[^\s@<>",;]+@[^\s@<>",;.]+(?:\.[^\s@<>",;.]+)+$/;
  if (/[\r\n]/.test(text)) return false;
  const named = /^(.*\S)\s*<([^<>]+)>$/.exec(text);
  return named ? address.test(named[2] ?? "") : address.test(text);
}

/** SMTP_URL as a log may show it: the password replaced by ***. */
export function redactSmtpUrl(urlText: string): string {
  try {
    const url = new URL(urlText);
    if (url.password !== "") url.password = "***";
    url.search = "";
    return url.toString();
  } catch {
    return "(SMTP_URL)";
  }
}

/**
 * PUBLIC_URL: the origin clients reach the service at (`https://licenses.example.com`, a port
 * allowed), without a path: Shipkey is served at the root (signatures cover the path). Unset:
 * URLs follow each request (Host, and X-Forwarded-* from a trusted proxy).
 */
export function publicUrlFrom(value: string | undefined): string | null {
  if (value === undefined || value.trim() === "") return null;
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new ConfigError(
      `PUBLIC_URL must be an absolute URL such as https://licenses.example.com, got "${value}"`,
    );
  }
  if (
    (url.protocol !== "https:" && url.protocol !== "http:") ||
    url.username !== "" ||
    url.password !== "" ||
    url.pathname !== "/" ||
    url.search !== "" ||
    url.hash !== ""
  ) {
    throw new ConfigError(
      `PUBLIC_URL must be an http(s) origin with no path, query or credentials, such as https://licenses.example.com, got "${value}"`,
    );
  }
  return url.origin;
}

function oneOf<T extends string>(
  env: NodeJS.ProcessEnv,
  name: string,
  values: readonly T[],
  fallback: T,
): T {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  if (!(values as readonly string[]).includes(text)) {
    throw new ConfigError(`${name} must be one of ${values.join(", ")}, got "${text}"`);
  }
  return text as T;
}

/** The environment variable that sets each limit. */
export const rateLimitVariables: Record<RateLimitName, string> = {
  license: "RATE_LIMIT_LICENSE",
  updates: "RATE_LIMIT_UPDATES",
  unknownKey: "RATE_LIMIT_UNKNOWN_KEY",
  publish: "RATE_LIMIT_PUBLISH",
  admin: "RATE_LIMIT_ADMIN",
};

const windowUnits = { s: 1000, m: 60_000, h: 3_600_000 } as const;

/** RATE_LIMITS=on|off, and each limit as `<requests>/<window>` with s, m or h: "300/1m". */
function rateLimitsFrom(env: NodeJS.ProcessEnv): RateLimitSettings | "off" {
  const switchText = env.RATE_LIMITS ?? "";
  if (switchText === "off") return "off";
  if (switchText !== "" && switchText !== "on") {
    throw new ConfigError(`RATE_LIMITS must be on or off, got "${switchText}"`);
  }
  const settings = { ...defaultRateLimits };
  for (const [name, variable] of Object.entries(rateLimitVariables) as Array<
    [RateLimitName, string]
  >) {
    const text = env[variable];
    if (text === undefined || text === "") continue;
    const match = /^(\d{1,9})\/(\d{1,6})([smh])$/.exec(text);
    const max = Number(match?.[1]);
    const windowMs =
      Number(match?.[2]) * windowUnits[(match?.[3] ?? "s") as keyof typeof windowUnits];
    if (!match || max < 1 || windowMs < 1000 || windowMs > 24 * 3_600_000) {
      throw new ConfigError(
        `${variable} must be <requests>/<window> such as 300/1m (window in s, m or h, at most 24h), got "${text}"`,
      );
    }
    settings[name] = { max, windowMs };
  }
  return settings;
}

function redisUrlFrom(value: string | undefined): string | null {
  if (value === undefined || value === "") return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError("REDIS_URL must be a redis:// or rediss:// URL");
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") {
    throw new ConfigError("REDIS_URL must be a redis:// or rediss:// URL");
  }
  return value;
}

function integerFrom(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${text}"`);
  }
  return value;
}

/** ACTIVATION_HISTORY_DAYS in ms (0: keep no ended activation); shared by the server and the CLI. */
export function activationHistoryMsFrom(env: NodeJS.ProcessEnv = process.env): number {
  return integerFrom(env, "ACTIVATION_HISTORY_DAYS", 365, 0, 36500) * 86_400_000;
}

/** WEBHOOKS_RETENTION_DAYS in ms (default 30); shared by the server and the CLI. */
export function webhookRetentionMsFrom(env: NodeJS.ProcessEnv = process.env): number {
  return integerFrom(env, "WEBHOOKS_RETENTION_DAYS", 30, 1, 36500) * 86_400_000;
}

/** EMAIL_RETENTION_DAYS in ms (default 90): how long sent and failed e-mail messages are kept. */
export function emailRetentionMsFrom(env: NodeJS.ProcessEnv = process.env): number {
  return integerFrom(env, "EMAIL_RETENTION_DAYS", 90, 1, 36500) * 86_400_000;
}

/**
 * INTEGRATION_EVENT_BODY_DAYS in ms (default 30; 0 keeps none past the next pruning): how long
 * the raw bodies of payment providers' events (customers' names and e-mails) are kept; shared
 * by the server and the CLI.
 */
export function integrationEventBodyMsFrom(env: NodeJS.ProcessEnv = process.env): number {
  return integerFrom(env, "INTEGRATION_EVENT_BODY_DAYS", 30, 0, 36500) * 86_400_000;
}

/** WEBHOOKS_ALLOW_PRIVATE=true|false (default false); shared by the server and the CLI. */
export function webhooksAllowPrivateFrom(env: NodeJS.ProcessEnv = process.env): boolean {
  return oneOf(env, "WEBHOOKS_ALLOW_PRIVATE", ["true", "false"], "false") === "true";
}

export const masterKeyFormat =
  "32 random bytes written as base64 (openssl rand -base64 32) or as 64 hex digits";

/** SHIPKEY_MASTER_KEY, checked; null when unset. Shared by the server and the CLI. */
export function masterKeyFromEnv(env: NodeJS.ProcessEnv = process.env): MasterKey | null {
  const text = env.SHIPKEY_MASTER_KEY;
  if (text === undefined || text === "") return null;
  return masterKeyFromText(text, "SHIPKEY_MASTER_KEY");
}

/**
 * A master key's text (from `source`: a variable or the key file), checked: the format, and not
 * one byte repeated (an all-zero or similar placeholder is no secret).
 */
export function masterKeyFromText(text: string, source: string): MasterKey {
  const key = parseMasterKey(text);
  if (!key) throw new ConfigError(`${source} must be ${masterKeyFormat}`);
  if (isRepeatedByteKey(key)) {
    throw new ConfigError(
      `${source} is one byte repeated 32 times (0x${key.toString("hex", 0, 1)}), a placeholder rather than a secret: use ${masterKeyFormat}`,
    );
  }
  return key;
}

/** DATABASE_URL, defaulted and checked; shared by the server and the CLI. */
export function databaseUrlFrom(env: NodeJS.ProcessEnv = process.env): string {
  const url =
    env.DATABASE_URL === undefined || env.DATABASE_URL === ""
      ? defaultDatabaseUrl
      : env.DATABASE_URL;
  try {
    parseDatabaseUrl(url);
  } catch (err) {
    throw new ConfigError(err instanceof Error ? err.message : String(err));
  }
  return url;
}

/**
 * TRUST_PROXY: unset/"false" (default: the client is the TCP peer), "true" (trust
 * X-Forwarded-* from any peer: only when nothing else can reach the port), or a comma-separated
 * list of proxy addresses/CIDRs.
 */
function trustProxyFrom(value: string | undefined): boolean | string[] {
  if (value === undefined || value === "" || value === "false") return false;
  if (value === "true") return true;
  const addresses = value
    .split(",")
    .map((a) => a.trim())
    .filter((a) => a !== "");
  if (addresses.length === 0 || addresses.some((a) => !/^[0-9a-fA-F:.]+(\/\d+)?$/.test(a))) {
    throw new ConfigError(
      `TRUST_PROXY must be true, false or a list of proxy addresses, got "${value}"`,
    );
  }
  return addresses;
}
