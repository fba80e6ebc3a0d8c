import { createHash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Channel } from "../../../db/schema.js";
import { ShipkeyError } from "../../../errors.js";

/** Path parameters every feed has. */
export interface ProductParams {
  productSlug: string;
}

/**
 * One query parameter as a string: absent or "" is undefined; a repeated one is a 400 (the
 * feeds never guess which of two values was meant).
 */
export function queryParam(query: unknown, name: string): string | undefined {
  const value = (query as Record<string, unknown> | undefined)?.[name];
  if (value === undefined || value === "") return undefined;
  if (typeof value !== "string") {
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${name} must be given once`);
  }
  return value;
}

const channelNames: Record<string, Channel> = { stable: "STABLE", beta: "BETA", alpha: "ALPHA" };

/** `stable`, `beta` or `alpha`, any case; absent means stable. */
export function parseChannel(raw: string | undefined): Channel {
  if (raw === undefined) return "STABLE";
  const name = raw.toLowerCase();
  const channel = Object.hasOwn(channelNames, name) ? channelNames[name] : undefined;
  if (channel === undefined) throw ShipkeyError.spec("INVALID_CHANNEL");
  return channel;
}

/** A feed's name for a platform or arch, mapped to the stored one; else 400. */
export function fromFeedName<T extends string>(names: Record<string, T>, raw: string): T {
  const value = Object.hasOwn(names, raw) ? names[raw] : undefined;
  if (value === undefined) throw ShipkeyError.spec("INVALID_PLATFORM_ARCH");
  return value;
}

/** Updaters poll: every answer may be stored but is revalidated before each use. */
export async function noCache(_request: FastifyRequest, reply: FastifyReply): Promise<void> {
  reply.header("cache-control", "no-cache");
}

/**
 * Sends a document (YAML, XML) with a weak ETag of its bytes; 304 without a body when the
 * client's If-None-Match already names it.
 */
export function sendDocument(
  request: FastifyRequest,
  reply: FastifyReply,
  contentType: string,
  body: string,
): FastifyReply {
  const etag = `W/"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
  reply.header("etag", etag);
  if (matchesEtag(request.headers["if-none-match"], etag)) return reply.code(304).send();
  return reply.type(contentType).send(body);
}

/** If-None-Match uses the weak comparison: W/ prefixes are ignored, "*" matches anything. */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, "");
  return header.split(",").some((tag) => tag.trim() === "*" || opaque(tag) === opaque(etag));
}

export const productSlugParam = {
  productSlug: { type: "string", description: "The product's slug" },
} as const;

export const channelQuery = {
  channel: {
    type: "string",
    description: "stable (default), beta or alpha, any case; beta also gets stable, alpha both",
  },
} as const;
