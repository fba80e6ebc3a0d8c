import type { Kysely } from "kysely";
import semver from "semver";
import type { Arch, Channel, DB, Platform } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import type { Product } from "../products/products.js";
import { mayReceive, type PublishedUpTo } from "./update-access.js";
import { normalizeVersion } from "./version.js";

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
  notes: string | null;
  /** When the version was first published (epoch ms). */
  publishedAt: number;
  entries: FeedEntry[];
}

export interface FeedQuery {
  product: Product;
  /** From checkUpdateAccess: on an expired license, only what was published up to its expiry. */
  publishedUpTo: PublishedUpTo;
  platform: Platform;
  /** Absent: every arch of the platform (electron-updater's files list). */
  arch?: Arch;
  channel: Channel;
  /** Strict semver, already normalised; only versions above it are offered. */
  currentVersion?: string;
  /** Which entries this feed's updater can use (a signature, a .zip, a sha512). */
  accepts?: (entry: FeedEntry) => boolean;
}

/** Channels nest: an ALPHA client also gets BETA and STABLE releases, a BETA one STABLE ones. */
const channelsFor: Record<Channel, Channel[]> = {
  STABLE: ["STABLE"],
  BETA: ["STABLE", "BETA"],
  ALPHA: ["STABLE", "BETA", "ALPHA"],
};

/**
 * The releases a feed offers, newest first: of the client's channel or a more stable one, not
 * yanked, within what the client's license may receive, with at least one entry the updater
 * accepts, and above `currentVersion` when given.
 */
export async function findFeedReleases(db: Kysely<DB>, query: FeedQuery): Promise<FeedRelease[]> {
  let select = db
    .selectFrom("release_versions as v")
    .innerJoin("release_artifacts as a", "a.version_id", "v.id")
    .select([
      "v.version",
      "v.channel",
      "v.release_notes",
      "v.created_at",
      "a.platform",
      "a.arch",
      "a.download_url",
      "a.signature",
      "a.sha512",
      "a.file_size",
    ])
    .where("v.product_id", "=", query.product.id)
    .where("v.yanked_at", "is", null)
    .where("v.channel", "in", channelsFor[query.channel])
    .where("a.platform", "=", query.platform);
  if (query.arch) select = select.where("a.arch", "=", query.arch);
  if (query.publishedUpTo !== null) {
    select = select.where("v.created_at", "<=", query.publishedUpTo);
  }
  const rows = await select.execute();

  const byVersion = new Map<string, FeedRelease>();
  for (const row of rows) {
    // Publish stores strict semver only; a row written by hand that is not is never offered.
    if (semver.parse(row.version) === null) continue;
    const entry: FeedEntry = {
      platform: row.platform,
      arch: row.arch,
      downloadUrl: row.download_url,
      signature: row.signature,
      sha512: row.sha512,
      fileSize: row.file_size === null ? null : Number(row.file_size),
    };
    if (query.accepts && !query.accepts(entry)) continue;
    if (query.currentVersion && semver.compare(row.version, query.currentVersion) <= 0) continue;
    let release = byVersion.get(row.version);
    if (!release) {
      release = {
        version: row.version,
        channel: row.channel,
        notes: row.release_notes,
        publishedAt: Number(row.created_at),
        entries: [],
      };
      byVersion.set(row.version, release);
    }
    release.entries.push(entry);
  }
  const releases = [...byVersion.values()].sort((a, b) => newestFirst(a.version, b.version));
  for (const release of releases) release.entries.sort(byArch);
  return releases;
}

/** The newest release a feed offers, or null. */
export async function findLatestRelease(
  db: Kysely<DB>,
  query: FeedQuery,
): Promise<FeedRelease | null> {
  return (await findFeedReleases(db, query))[0] ?? null;
}

/**
 * Semver precedence, prerelease identifiers included, newest first. Versions that differ only
 * in build metadata have equal precedence; the version string breaks the tie, so the order never
 * depends on the database.
 */
export function newestFirst(a: string, b: string): number {
  const precedence = semver.compare(b, a);
  if (precedence !== 0) return precedence;
  return a < b ? 1 : a > b ? -1 : 0;
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
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${name} must be a semantic version`);
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
