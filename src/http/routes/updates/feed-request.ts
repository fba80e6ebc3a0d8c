import { createHash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import { type DB } from "../../../db/schema.js";
import { type Product, requireProduct } from "../../../domain/products/products.js";
import {
  checkUpdateAccess,
  type PublishedUpTo,
  type UpdateCredentials,
} from "../../../domain/releases/update-access.js";
import type { FeedEntry, FeedRelease } from "../../../domain/releases/update-feed.js";
import type { Audience } from "../../../domain/releases/rollout.js";
import type { UsageCounts } from "../../../domain/releases/usage-counts.js";
import { ShipkeyError } from "../../../errors.js";
import { requestOrigin } from "../../public-origin.js";
import {
  arches,
  type Channel,
  limits,
  type Platform,
  platforms,
} from "../../../contracts/vocabulary.js";

/** What the feed and download routes are given. */
export interface FeedDeps {
  db: Kysely<DB>;
  counts: UsageCounts;
}

/** A product's feed, opened for one request: the client may read it. */
export interface OpenFeed {
  product: Product;
  publishedUpTo: PublishedUpTo;
  /** The URL a feed hands out for an entry: the stored one, or the counted redirect. */
  urlOf(release: FeedRelease, entry: FeedEntry): string;
  /** The machine the server decides rollouts for (machineKey); a feed may choose another. */
  audience: Audience;
  /** The request's time (epoch ms), which rollouts are read at. */
  now: number;
}

/** A client let in to a product's feeds and downloads (update-access.ts: licensed updates). */
export interface Admitted {
  product: Product;
  publishedUpTo: PublishedUpTo;
  credentials: ReturnType<typeof updateCredentials>;
}

/** Reads the product and lets the client in, or throws 404 / 401 / 403. */
export async function admit(
  request: FastifyRequest,
  db: Kysely<DB>,
  productSlug: string,
  now: number,
): Promise<Admitted> {
  const product = await requireProduct(db, productSlug);
  // A public product ignores whatever credentials came, whole or not.
  const credentials = product.updatesRequireLicense ? updateCredentials(request) : null;
  const publishedUpTo = await checkUpdateAccess(db, product, credentials?.given ?? null, now);
  return { product, publishedUpTo, credentials };
}

/**
 * Lets the client in to a feed and counts the check. `currentVersion` is the client's version
 * when the feed carries one.
 */
export async function openFeed(
  request: FastifyRequest,
  { db, counts }: FeedDeps,
  check: { productSlug: string; platform: Platform; channel: Channel; currentVersion?: string },
): Promise<OpenFeed> {
  const now = Date.now();
  const { product, publishedUpTo, credentials } = await admit(request, db, check.productSlug, now);
  counts.countCheck(product.id, check.currentVersion ?? "", check.platform, check.channel, now);
  return {
    product,
    publishedUpTo,
    audience: { machine: machineKey(request) },
    now,
    urlOf: (release, entry) => {
      if (!product.downloadRedirects) return entry.downloadUrl;
      const path = downloadPath(product.slug, release.version, entry);
      // Credentials that came in the query (Sparkle) go on in it; headers are sent again.
      const query = credentials?.inQuery ? `?${new URLSearchParams({ ...credentials.given })}` : "";
      // A Host that is not a plain host name gets a relative URL, never one built from its text.
      return `${requestOrigin(request) ?? ""}${path}${query}`;
    },
  };
}

/**
 * The machine a rollout decides for: the `Shipkey-Machine` header or the `machineId` query
 * parameter when the app sends one (as licensed updates do), else the client's address.
 */
export function machineKey(request: FastifyRequest): string {
  const header = boundedHeader(request, "shipkey-machine", limits.identifier);
  if (header !== undefined && header !== "") return `machine:${header}`;
  const query = queryParam(request.query, "machineId");
  return query === undefined ? `address:${request.ip}` : `machine:${query}`;
}

/**
 * /api/downloads/{slug}/{version}/{platform}/{arch}/{file name of the stored URL}: the last
 * segment is ignored by the route, but updaters name the downloaded file after it (an .exe must
 * stay an .exe).
 */
export function downloadPath(slug: string, version: string, entry: FeedEntry): string {
  const segments = [slug, version, entry.platform, entry.arch].map(encodeURIComponent);
  const file = storedFileName(entry.downloadUrl);
  return `/api/downloads/${segments.join("/")}${file ? `/${file}` : ""}`;
}

function storedFileName(url: string): string {
  try {
    return new URL(url).pathname.split("/").pop() ?? "";
  } catch {
    return "";
  }
}

/**
 * A license key and machine id, from `Authorization: License <key>` and `Shipkey-Machine`, or
 * from the `licenseKey` and `machineId` query parameters (Sparkle cannot always set headers).
 * Neither: null. One without the other: 401.
 */
export function updateCredentials(
  request: FastifyRequest,
): { given: UpdateCredentials; inQuery: boolean } | null {
  const authorization = boundedHeader(request, "authorization", authorizationMax);
  const scheme = /^License +(\S+)$/i.exec(authorization ?? "");
  const headerMachine = boundedHeader(request, "shipkey-machine", limits.identifier);
  const queryKey = queryParam(request.query, "licenseKey");
  const licenseKey = scheme?.[1] ?? queryKey;
  const machineId =
    (headerMachine !== undefined && headerMachine !== "" ? headerMachine : undefined) ??
    queryParam(request.query, "machineId");
  if (licenseKey === undefined && machineId === undefined) return null;
  if (licenseKey === undefined || machineId === undefined) {
    throw new ShipkeyError(
      "UPDATES_LICENSE_REQUIRED",
      licenseKey === undefined
        ? "A machine id was sent without a license key"
        : "A license key was sent without a machine id (Shipkey-Machine or machineId)",
    );
  }
  return { given: { licenseKey, machineId }, inQuery: scheme === null && queryKey !== undefined };
}

/** `License <key>`: the scheme, a space and a key of at most 255 characters, with room to spare. */
const authorizationMax = 1024;

/**
 * A request header a feed reads, as one string; longer than `max`: a 400 naming it, before any
 * pattern runs on it. Absent (or repeated, which Node joins or lists): undefined.
 */
export function boundedHeader(
  request: FastifyRequest,
  name: string,
  max: number,
): string | undefined {
  const value = request.headers[name];
  if (typeof value !== "string") return undefined;
  if (value.length > max) {
    throw new ShipkeyError("FIELD_TOO_LONG", `${name} must be at most ${max} characters`, {
      field: name,
    });
  }
  return value;
}

/**
 * A credential's query parameter (licenseKey, machineId), which the request reader leaves to
 * the feeds (InputRules.unread), so a product that wants none never reads it: absent or "" is
 * undefined; a repeated one is a 400 (the feeds never guess which of two values was meant).
 */
function queryParam(query: unknown, name: string): string | undefined {
  const value = (query as Record<string, unknown> | undefined)?.[name];
  if (value === undefined || value === "") return undefined;
  if (typeof value !== "string") {
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${name} must be given once`, { field: name });
  }
  return value;
}

const byName = <T extends string>(values: readonly T[]) =>
  Object.fromEntries(values.map((v) => [v.toLowerCase(), v])) as Record<string, T>;
/** The spec's own names (WINDOWS, X64, ...) keyed in lower case, for any case a request gives. */
export const platformNames = byName(platforms);
export const archNames = byName(arches);

/**
 * A feed's name for a platform or arch (`names` keyed in lower case), mapped to the stored one,
 * in any case (WINDOWS, windows, Windows); else 400 naming `field`, the request's parameter.
 * Channels, one vocabulary on every feed, are matched the same way by the request reader.
 */
export function fromFeedName<T extends string>(
  names: Record<string, T>,
  raw: string,
  field: string,
): T {
  const name = raw.toLowerCase();
  const value = Object.hasOwn(names, name) ? names[name] : undefined;
  if (value === undefined) throw ShipkeyError.spec("INVALID_PLATFORM_ARCH", { field });
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

/**
 * If-None-Match uses the weak comparison: W/ prefixes are ignored, "*" matches anything. A header
 * longer than a few dozen tags is not read (the full answer goes out).
 */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (header === undefined || header.length > 1024) return false;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, "");
  return header.split(",").some((tag) => tag.trim() === "*" || opaque(tag) === opaque(etag));
}
