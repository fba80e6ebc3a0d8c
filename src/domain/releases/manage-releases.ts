import { inTransaction } from "../../db/transaction.js";
import type { Kysely } from "kysely";
import type { Arch, Channel, DB, Platform } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { toIso } from "../../lib/time.js";
import { requireProduct } from "../products/products.js";

export interface ReleaseVersionView {
  version: string;
  channel: Channel;
  releaseNotes: string | null;
  createdAt: string;
  updatedAt: string;
  entries: Array<{
    platform: Platform;
    arch: Arch;
    downloadUrl: string;
    signature: string | null;
    fileSize: number | null;
    updatedAt: string;
  }>;
}

/** A product's releases, grouped by version, most recently published first. */
export async function listReleases(
  db: Kysely<DB>,
  productSlug: string,
): Promise<ReleaseVersionView[]> {
  const product = await requireProduct(db, productSlug);
  const versions = await db
    .selectFrom("release_versions")
    .selectAll()
    .where("product_id", "=", product.id)
    .orderBy("updated_at", "desc")
    .orderBy("version", "desc")
    .execute();
  const artifacts = await db
    .selectFrom("release_artifacts")
    .innerJoin("release_versions", "release_versions.id", "release_artifacts.version_id")
    .selectAll("release_artifacts")
    .where("release_versions.product_id", "=", product.id)
    .orderBy("release_artifacts.platform")
    .orderBy("release_artifacts.arch")
    .execute();
  return versions.map((v) => ({
    version: v.version,
    channel: v.channel,
    releaseNotes: v.release_notes,
    createdAt: toIso(v.created_at),
    updatedAt: toIso(v.updated_at),
    entries: artifacts
      .filter((a) => a.version_id === v.id)
      .map((a) => ({
        platform: a.platform,
        arch: a.arch,
        downloadUrl: a.download_url,
        signature: a.signature,
        fileSize: a.file_size,
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
