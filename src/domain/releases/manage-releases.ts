import { inTransaction } from "../../db/transaction.js";
import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { isoOrNull, toIso } from "../../lib/time.js";
import { requireProduct } from "../products/products.js";
import { versionSortKey } from "../../lib/version-sort-key.js";
import { normalizeVersion } from "./version.js";
import { rolloutOf, rolloutView } from "./rollout.js";
import { type Arch, type Platform } from "../../contracts/vocabulary.js";
import type { ReleaseVersion } from "../../contracts/release-versions.js";

export type ReleaseVersionView = ReleaseVersion;

/**
 * A product's releases, grouped by version, newest first by semver precedence (prerelease
 * included), the order the update feeds use; a stored version that is not strict semver (written
 * by hand, never by publish) comes last.
 */
export async function listReleases(
  db: Kysely<DB>,
  productSlug: string,
): Promise<ReleaseVersionView[]> {
  const product = await requireProduct(db, productSlug);
  const versions = await db
    .selectFrom("release_versions")
    .selectAll()
    .where("product_id", "=", product.id)
    .execute();
  const sorted = newestVersionsFirst(versions);
  const artifacts = await db
    .selectFrom("release_artifacts")
    .innerJoin("release_versions", "release_versions.id", "release_artifacts.version_id")
    .selectAll("release_artifacts")
    .where("release_versions.product_id", "=", product.id)
    .orderBy("release_artifacts.platform")
    .orderBy("release_artifacts.arch")
    .execute();
  const entriesOf = new Map<string, typeof artifacts>();
  for (const a of artifacts)
    entriesOf.set(a.version_id, [...(entriesOf.get(a.version_id) ?? []), a]);
  const now = Date.now();
  return sorted.map((v) => ({
    version: v.version,
    channel: v.channel,
    critical: v.critical === 1,
    rollout: rolloutView(rolloutOf(v), now),
    releaseNotes: v.release_notes,
    releaseNotesHtml: v.release_notes_html,
    createdAt: toIso(v.created_at),
    updatedAt: toIso(v.updated_at),
    yankedAt: isoOrNull(v.yanked_at),
    entries: (entriesOf.get(v.id) ?? []).map((a) => ({
      platform: a.platform,
      arch: a.arch,
      downloadUrl: a.download_url,
      signature: a.signature,
      fileSize: a.file_size,
      sha512: a.sha512,
      updatedAt: toIso(a.updated_at),
    })),
  }));
}

/** Deletes a version with all its entries, or (with a target) one platform+arch entry. */
export async function deleteRelease(
  db: Kysely<DB>,
  productSlug: string,
  version: string,
  target?: { platform: Platform; arch: Arch },
): Promise<void> {
  const product = await requireProduct(db, productSlug);
  await inTransaction(db, async (trx) => {
    const row = await trx
      .selectFrom("release_versions")
      .select("id")
      .where("product_id", "=", product.id)
      .where("version", "=", version)
      .executeTakeFirst();
    if (!row)
      throw new ShipkeyError("RELEASE_NOT_FOUND", `No version ${version} of ${productSlug}`);
    if (target) {
      const deleted = await trx
        .deleteFrom("release_artifacts")
        .where("version_id", "=", row.id)
        .where("platform", "=", target.platform)
        .where("arch", "=", target.arch)
        .executeTakeFirst();
      if (deleted.numDeletedRows === 0n) {
        throw new ShipkeyError(
          "RELEASE_NOT_FOUND",
          `No ${target.platform}/${target.arch} entry in version ${version} of ${productSlug}`,
        );
      }
      return;
    }
    await trx.deleteFrom("release_artifacts").where("version_id", "=", row.id).execute();
    await trx.deleteFrom("release_versions").where("id", "=", row.id).execute();
  });
}

/**
 * Withdraws a version from every feed (yanked) or restores it. Yanking a yanked version keeps
 * its first yank time. Returns the version's state after the change.
 */
export async function setReleaseYanked(
  db: Kysely<DB>,
  productSlug: string,
  version: string,
  yanked: boolean,
  now = Date.now(),
): Promise<{ product: string; version: string; yankedAt: string | null }> {
  const product = await requireProduct(db, productSlug);
  const row = await db
    .updateTable("release_versions")
    .set((eb) => ({
      yanked_at: yanked ? eb.fn.coalesce("yanked_at", eb.val(now)) : null,
    }))
    .where("product_id", "=", product.id)
    .where("version", "=", version)
    .returning("yanked_at")
    .executeTakeFirst();
  if (!row) throw new ShipkeyError("RELEASE_NOT_FOUND", `No version ${version} of ${productSlug}`);
  return { product: productSlug, version, yankedAt: isoOrNull(row.yanked_at) };
}

/**
 * Strict semver versions newest first (their sort keys, computed once each), then any other
 * version (written by hand) by its text, greatest first.
 */
function newestVersionsFirst<T extends { version: string }>(versions: T[]): T[] {
  const keyed = versions.map((v) => ({
    v,
    key: normalizeVersion(v.version) === v.version ? versionSortKey(v.version) : null,
  }));
  keyed.sort((a, b) => {
    if (a.key !== null && b.key !== null) return a.key < b.key ? 1 : a.key > b.key ? -1 : 0;
    if (a.key !== b.key) return a.key !== null ? -1 : 1;
    return a.v.version < b.v.version ? 1 : a.v.version > b.v.version ? -1 : 0;
  });
  return keyed.map(({ v }) => v);
}
