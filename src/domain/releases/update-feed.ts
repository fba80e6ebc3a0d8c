import { type Kysely, type SelectQueryBuilder, sql } from "kysely";
import type { Arch, Channel, DB, Platform } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import type { Product } from "../products/products.js";
import { mayReceive, type PublishedUpTo } from "./update-access.js";
import { sortKeyAbove, versionSortKey } from "../../lib/version-sort-key.js";
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
  /** What an entry needs for this feed's updater to use it. */
  needs?: EntryNeed;
}

/** Tauri refuses an update without a signature, electron-updater one without a sha512, and
 * Squirrel.Mac installs only .zip archives. */
export type EntryNeed = "signature" | "sha512" | "zip";

/** A .zip archive: the URL's path (its query and fragment aside) ends in .zip, any case. */
export function isZip(downloadUrl: string): boolean {
  try {
    return new URL(downloadUrl).pathname.toLowerCase().endsWith(".zip");
  } catch {
    return false; // stored by hand, not through publish
  }
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
 * the updater accepts, and above `currentVersion` when given. Versions are read newest first by
 * their sort key, `count` at a time, so a product with thousands of versions costs the same as
 * one with ten; the index on the entries finds those with a usable entry.
 */
export async function findFeedReleases(
  db: Kysely<DB>,
  query: FeedQuery,
  count: number,
): Promise<FeedRelease[]> {
  const releases: FeedRelease[] = [];
  let below: string | null = null;
  const floor = query.currentVersion === undefined ? "" : sortKeyAbove(query.currentVersion);
  for (;;) {
    let select = db
      .selectFrom("release_versions")
      .select(["id", "version", "channel", "release_notes", "created_at", "sort_key"])
      .where("product_id", "=", query.product.id)
      .where("yanked_at", "is", null)
      .where("channel", "in", channelsFor[query.channel])
      // A row written by hand has no key ("") and is never offered.
      .where("sort_key", ">", floor)
      // Only versions with an entry this updater can use, found by the entries' unique index.
      .where((eb) => eb.exists(usableEntries(eb.selectFrom("release_artifacts as a"), query)));
    if (query.publishedUpTo !== null)
      select = select.where("created_at", "<=", query.publishedUpTo);
    if (below !== null) select = select.where("sort_key", "<", below);
    // As many as wanted: the SQL filter is exact but for .zip, which isZip may still refuse.
    const versions = await select.orderBy("sort_key", "desc").limit(count).execute();
    const last = versions[versions.length - 1];
    if (!last) return releases;
    let artifacts = db
      .selectFrom("release_artifacts")
      .select([
        "version_id",
        "platform",
        "arch",
        "download_url",
        "signature",
        "sha512",
        "file_size",
      ])
      .where(
        "version_id",
        "in",
        versions.map((v) => v.id),
      )
      .where("platform", "=", query.platform);
    if (query.arch) artifacts = artifacts.where("arch", "=", query.arch);
    const entries = new Map<string, FeedEntry[]>();
    for (const row of await artifacts.execute()) {
      const entry: FeedEntry = {
        platform: row.platform,
        arch: row.arch,
        downloadUrl: row.download_url,
        signature: row.signature,
        sha512: row.sha512,
        fileSize: row.file_size === null ? null : Number(row.file_size),
      };
      if (!meets(entry, query.needs)) continue;
      entries.set(row.version_id, [...(entries.get(row.version_id) ?? []), entry]);
    }
    for (const version of versions) {
      const offered = entries.get(version.id);
      if (!offered) continue;
      releases.push({
        version: version.version,
        channel: version.channel,
        notes: version.release_notes,
        publishedAt: Number(version.created_at),
        entries: offered.sort(byArch),
      });
      if (releases.length === count) return releases;
    }
    if (versions.length < count) return releases;
    below = last.sort_key;
  }
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

/** The entries of a version (release_versions in the outer query) that a feed can offer. */
function usableEntries(
  from: SelectQueryBuilder<DB & { a: DB["release_artifacts"] }, "a", object>,
  { platform, arch, needs }: FeedQuery,
) {
  let entries = from
    .select(sql.lit(1).as("one"))
    .where("a.version_id", "=", sql.ref<string>("release_versions.id"))
    .where("a.platform", "=", platform);
  if (arch) entries = entries.where("a.arch", "=", arch);
  if (needs === "signature") entries = entries.where("a.signature", "is not", null);
  if (needs === "sha512") entries = entries.where("a.sha512", "is not", null);
  // A superset of isZip (a .zip before a query or fragment); isZip decides on each entry.
  if (needs === "zip")
    entries = entries.where(sql<string>`lower(a.download_url)`, "like", "%.zip%");
  return entries;
}

function meets(entry: FeedEntry, need: EntryNeed | undefined): boolean {
  if (need === "signature") return entry.signature !== null;
  if (need === "sha512") return entry.sha512 !== null;
  if (need === "zip") return isZip(entry.downloadUrl);
  return true;
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
