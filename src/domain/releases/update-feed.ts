import { type Kysely, type Selectable, sql } from "kysely";
import { compileOnce } from "../../db/compiled-query.js";
import { type DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import type { Product } from "../products/products.js";
import { mayReceive, type PublishedUpTo } from "./update-access.js";
import { sortKeyAbove, versionSortKey } from "../../lib/version-sort-key.js";
import { normalizeVersion } from "./version.js";
import { type Audience, isOffered, type Rollout, rolloutOf } from "./rollout.js";
import {
  type Arch,
  arches,
  type Channel,
  channels,
  type Platform,
} from "../../contracts/vocabulary.js";
import {
  type FeedRule,
  hasNeed,
  type ServedEntry,
  serves,
  type UpdateFeed,
  updateFeeds,
} from "./feed-rules.js";

/** One platform/arch entry of a version, as the feeds hand it out. */
export interface FeedEntry {
  platform: Platform;
  arch: Arch;
  downloadUrl: string;
  signature: string | null;
  sha512: string | null;
  fileSize: number | null;
}

/** A version a feed offers, with its entries for the requested platform (and arch). */
export interface FeedRelease {
  version: string;
  channel: Channel;
  /** The notes the feed serves (feed-rules.ts): as published, or the sanitised HTML rendered
   * when they were published (release-notes.ts). */
  notes: string | null;
  /** When the version was first published (epoch ms). */
  publishedAt: number;
  /** Offered to every machine whatever its rollout (a pause still halts it). */
  critical: boolean;
  /** Its phased rollout; null: released to every machine. */
  rollout: Rollout | null;
  entries: FeedEntry[];
}

export interface FeedQuery {
  /** The feed asking: which entries it serves and with which notes (feed-rules.ts). */
  updateFeed: UpdateFeed;
  product: Product;
  /** From checkUpdateAccess: on an expired license, only what was published up to its expiry. */
  publishedUpTo: PublishedUpTo;
  platform: Platform;
  /** Absent: every arch of the platform (electron-updater's files list). */
  arch?: Arch;
  channel: Channel;
  /** Strict semver, already normalised; only versions above it are offered. */
  currentVersion?: string;
  /** Who decides on versions in a rollout (rollout.ts); a version not offered is skipped. */
  audience: Audience;
  /** The time rollouts are read at (epoch ms). */
  now: number;
}

/**
 * A Sparkle EdDSA signature (`sign_update`'s `sparkle:edSignature`): the base64 of a 64-byte
 * Ed25519 signature. A Tauri (minisign) signature is the base64 of a text file, never this.
 */
export function isEdSignature(signature: string): boolean {
  return /^[A-Za-z0-9+/]{85}[AQgw]==$/.test(signature);
}

/** The update feeds that offer an entry, as the dashboard marks them (docs/update-feeds.md). */
export function feedsOffering(entry: ServedEntry): string[] {
  const feeds = Object.keys(updateFeeds) as UpdateFeed[];
  return feeds.filter((feed) => serves(feed, entry)).map((feed) => updateFeeds[feed].label);
}

/** Channels nest: an ALPHA client also gets BETA and STABLE releases, a BETA one STABLE ones. */
const channelsFor: Record<Channel, Channel[]> = {
  STABLE: ["STABLE"],
  BETA: ["STABLE", "BETA"],
  ALPHA: ["STABLE", "BETA", "ALPHA"],
};

/**
 * The newest `count` releases a feed offers, newest first: of the client's channel or a more
 * stable one, not yanked, within what the client's license may receive, with at least one entry
 * the updater accepts, and above `currentVersion` when given. One statement reads the versions
 * newest first by their sort key, joined to their usable entries, a page at a time, so a product
 * with thousands of versions costs the same as one with ten.
 */
export async function findFeedReleases(
  db: Kysely<DB>,
  query: FeedQuery,
  count: number,
): Promise<FeedRelease[]> {
  const rule: FeedRule = updateFeeds[query.updateFeed];
  if (!rule.platforms.includes(query.platform)) return [];
  const params: FeedParams = {
    productId: query.product.id,
    channels: channelsFor[query.channel],
    platform: query.platform,
    arches: query.arch === undefined ? arches : [query.arch],
    above: query.currentVersion === undefined ? "" : sortKeyAbove(query.currentVersion),
    below: aboveEveryKey,
    publishedUpTo: query.publishedUpTo ?? Number.MAX_SAFE_INTEGER,
  };
  // A version has at most one entry per arch: a page of this many rows holds `count` whole
  // versions (and maybe part of the next, which the next page reads again).
  const pageRows = count * params.arches.length;
  const page = feedPage(query.updateFeed, pageRows);
  const releases: FeedRelease[] = [];
  for (;;) {
    const { rows } = await page(db, params);
    const grouped = byVersion(rows, rule.needs);
    // A short page is the last one, and whole; a full one may end inside version count + 1.
    const lastPage = rows.length < pageRows;
    const versions = lastPage ? grouped : grouped.slice(0, count);
    for (const { release } of versions) {
      if (release.entries.length === 0 || !isOffered(release, query.audience, query.now)) continue;
      if (releases.push(release) === count) return releases;
    }
    const last = versions[versions.length - 1];
    if (lastPage || !last) return releases;
    params.below = last.sortKey;
  }
}

/** Rows (newest version first) grouped by version; entries in arch order. */
function byVersion(
  rows: FeedRow[],
  needs: FeedRule["needs"],
): Array<{ release: FeedRelease; sortKey: string }> {
  const versions: Array<{ release: FeedRelease; sortKey: string }> = [];
  for (const row of rows) {
    let last = versions[versions.length - 1];
    if (last?.release.version !== row.version) {
      const release: FeedRelease = {
        version: row.version,
        channel: row.channel,
        notes: row.notes,
        publishedAt: Number(row.created_at),
        critical: row.critical === 1,
        rollout: rolloutOf(row),
        entries: [],
      };
      last = { release, sortKey: row.sort_key };
      versions.push(last);
    }
    const entry: FeedEntry = {
      platform: row.platform,
      arch: row.arch,
      downloadUrl: row.download_url,
      signature: row.signature,
      sha512: row.sha512,
      fileSize: row.file_size === null ? null : Number(row.file_size),
    };
    // The SQL filter is exact but for .zip, which isZip may still refuse.
    if (hasNeed(needs, entry)) last.release.entries.push(entry);
  }
  for (const { release } of versions) release.entries.sort(byArch);
  return versions;
}

interface FeedParams extends Record<string, unknown> {
  productId: string;
  channels: readonly Channel[];
  platform: Platform;
  arches: readonly Arch[];
  above: string;
  below: string;
  publishedUpTo: number;
}

/** Sort keys use 0-9 and a-z only (lib/version-sort-key.ts): "~" sorts after every one. */
const aboveEveryKey = "~";

type FeedRow = Pick<
  Selectable<DB["release_versions"]>,
  | "version"
  | "channel"
  | "created_at"
  | "sort_key"
  | "critical"
  | "rollout_started_at"
  | "rollout_percent"
  | "rollout_step_hours"
  | "rollout_paused_at"
> &
  Pick<
    Selectable<DB["release_artifacts"]>,
    "platform" | "arch" | "download_url" | "signature" | "sha512" | "file_size"
  > & { notes: string | null };

const feedPages = new Map<string, ReturnType<typeof compileFeedPage>>();

/** A feed's statement for a page size (a literal LIMIT), compiled once. */
function feedPage(feed: UpdateFeed, rows: number) {
  const key = `${feed} ${rows}`;
  let page = feedPages.get(key);
  if (page === undefined) {
    page = compileFeedPage(updateFeeds[feed], rows);
    feedPages.set(key, page);
  }
  return page;
}

const feedParamNames = [
  "productId",
  "channels",
  "platform",
  "arches",
  "above",
  "below",
  "publishedUpTo",
] as const;

/** The notes column a feed serves. */
const notesColumn = { html: "v.release_notes_html", text: "v.release_notes" } as const;

function compileFeedPage({ needs, notes }: FeedRule, rows: number) {
  const build = (db: Kysely<DB>, p: FeedParams) => {
    let select = db
      .selectFrom("release_versions as v")
      .innerJoin("release_artifacts as a", "a.version_id", "v.id")
      .select([
        "v.version",
        "v.channel",
        "v.created_at",
        "v.sort_key",
        "v.critical",
        "v.rollout_started_at",
        "v.rollout_percent",
        "v.rollout_step_hours",
        "v.rollout_paused_at",
        "a.platform",
        "a.arch",
        "a.download_url",
        "a.signature",
        "a.sha512",
        "a.file_size",
      ])
      .select((eb) => eb.ref(notesColumn[notes]).as("notes"))
      .where("v.product_id", "=", p.productId)
      .where("v.yanked_at", "is", null)
      .where("v.channel", "in", p.channels)
      // A row written by hand has no key ("") and is never offered.
      .where("v.sort_key", ">", p.above)
      .where("v.sort_key", "<", p.below)
      .where("v.created_at", "<=", p.publishedUpTo)
      .where("a.platform", "=", p.platform)
      .where("a.arch", "in", p.arches);
    if (needs === "signature") select = select.where("a.signature", "is not", null);
    if (needs === "sha512") select = select.where("a.sha512", "is not", null);
    // A superset of isZip (a .zip before a query or fragment); isZip decides on each entry.
    if (needs === "zip")
      select = select.where(sql<string>`lower(a.download_url)`, "like", "%.zip%");
    // By the sort key alone, so the index on (product_id, sort_key) gives the order.
    return select.orderBy("v.sort_key", "desc").limit(sql.lit(rows));
  };
  return compileOnce<FeedParams, FeedRow>(feedParamNames, build, {
    channels: channels.length,
    arches: arches.length,
  });
}

/** The newest release a feed offers, or null. */
export async function findLatestRelease(
  db: Kysely<DB>,
  query: FeedQuery,
): Promise<FeedRelease | null> {
  return (await findFeedReleases(db, query, 1))[0] ?? null;
}

/**
 * Semver precedence, prerelease identifiers included, newest first, for strict semver versions:
 * the order of their sort keys, which is also the feeds' order in SQL. Versions that differ only
 * in build metadata have equal precedence; the version text breaks the tie.
 */
export function newestFirst(a: string, b: string): number {
  const [ka, kb] = [versionSortKey(a), versionSortKey(b)];
  return ka < kb ? 1 : ka > kb ? -1 : 0;
}

const archOrder: Record<Arch, number> = { X64: 0, ARM64: 1 };

/** X64 first: electron-updater's legacy `path` is the first file. */
function byArch(a: FeedEntry, b: FeedEntry): number {
  return archOrder[a.arch] - archOrder[b.arch];
}

/**
 * A client's current version as the feeds read it: one leading "v" accepted, then strict
 * semver; anything else is a 400 naming the parameter.
 */
export function parseCurrentVersion(raw: string, name = "currentVersion"): string {
  const version = normalizeVersion(raw);
  if (version === null) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${name} must be a semantic version`, {
      field: name,
    });
  }
  return version;
}

/** A build a client may download: its version's id (for the counts) and the stored URL. */
export interface Download {
  versionId: string;
  downloadUrl: string;
}

/**
 * The stored URL of a version's build for a platform and arch. A yanked version, or one the
 * client's expired license may not receive, is refused like the feeds would not offer it: 404
 * RELEASE_NOT_FOUND, 403 UPDATES_LICENSE_REFUSED.
 */
export async function findDownload(
  db: Kysely<DB>,
  query: {
    product: Product;
    publishedUpTo: PublishedUpTo;
    version: string;
    platform: Platform;
    arch: Arch;
  },
): Promise<Download> {
  const row = await db
    .selectFrom("release_versions as v")
    .innerJoin("release_artifacts as a", "a.version_id", "v.id")
    .select(["v.id", "v.created_at", "a.download_url"])
    .where("v.product_id", "=", query.product.id)
    .where("v.version", "=", query.version)
    .where("v.yanked_at", "is", null)
    .where("a.platform", "=", query.platform)
    .where("a.arch", "=", query.arch)
    .executeTakeFirst();
  if (!row) {
    throw new ShipkeyError(
      "RELEASE_NOT_FOUND",
      `No ${query.platform}/${query.arch} build of ${query.product.slug} ${query.version}`,
    );
  }
  if (!mayReceive(Number(row.created_at), query.publishedUpTo)) {
    throw new ShipkeyError(
      "UPDATES_LICENSE_REFUSED",
      "The license expired before this version was published",
    );
  }
  return { versionId: row.id, downloadUrl: row.download_url };
}
