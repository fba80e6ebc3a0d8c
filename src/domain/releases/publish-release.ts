import type { Kysely, Transaction } from "kysely";
import type {
  Arch,
  Channel,
  DB,
  Platform,
  ReleaseArtifactsTable,
  ReleaseVersionsTable,
} from "../../db/schema.js";
import { compileOnce } from "../../db/compiled-query.js";
import { versionSortKey } from "../../lib/version-sort-key.js";
import { inTransaction } from "../../db/transaction.js";
import { ShipkeyError } from "../../errors.js";
import { hasTerminalControl } from "../../lib/control-characters.js";
import { newId } from "../../lib/ids.js";
import { assertMaxLength, limits } from "../limits.js";
import type { Product } from "../products/products.js";
import { checkTauriSignatures } from "./tauri-signatures.js";

/** A publish request that passed the spec's checks (section 7, in order). */
export interface PublishRequest {
  productSlug: string;
  /** Already stripped of its leading "v" and checked as strict semver. */
  version: string;
  channel: Channel;
  releaseNotes: unknown;
  releases: Array<{
    platform: Platform;
    arch: Arch;
    downloadUrl: string;
    signature: unknown;
    fileSize: unknown;
    sha512: unknown;
  }>;
}

export interface ReleaseEntry {
  platform: Platform;
  arch: Arch;
  downloadUrl: string;
  signature: string | null;
  fileSize: number | null;
  sha512?: string | null;
}

export interface PublishResult {
  product: string;
  version: string;
  channel: Channel;
  releases: Array<{ platform: Platform; arch: Arch; status: "created" | "updated" }>;
}

/**
 * The documented limits, checked after the spec's own checks (docs/reference/publishing-and-releases.md): every field
 * within its size, optional fields of the right type, no platform+arch twice.
 */
export function checkPublishLimits(request: PublishRequest): {
  releaseNotes: string | null;
  entries: ReleaseEntry[];
} {
  assertMaxLength("version", request.version, limits.identifier);
  const notes = request.releaseNotes;
  if (notes !== undefined && notes !== null && typeof notes !== "string") {
    throw new ShipkeyError("INVALID_FIELD_TYPE", "releaseNotes must be a string");
  }
  assertMaxLength("releaseNotes", notes, limits.releaseNotes);
  if (typeof notes === "string" && hasTerminalControl(notes)) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      "releaseNotes must not contain control characters other than tabs and line breaks",
    );
  }
  if (request.releases.length > limits.releasesPerPublish) {
    throw new ShipkeyError(
      "TOO_MANY_RELEASES",
      `releases must have at most ${limits.releasesPerPublish} entries`,
    );
  }
  const seen = new Set<string>();
  const entries = request.releases.map((entry, index): ReleaseEntry => {
    const at = `releases[${index}]`;
    assertMaxLength(`${at}.downloadUrl`, entry.downloadUrl, limits.downloadUrl);
    const { signature } = entry;
    // "" is missing, like any optional field.
    const fileSize = entry.fileSize === "" ? null : entry.fileSize;
    if (signature !== undefined && signature !== null && typeof signature !== "string") {
      throw new ShipkeyError("INVALID_FIELD_TYPE", `${at}.signature must be a string`);
    }
    assertMaxLength(`${at}.signature`, signature, limits.signature);
    if (
      fileSize !== undefined &&
      fileSize !== null &&
      !(typeof fileSize === "number" && Number.isSafeInteger(fileSize) && fileSize >= 0)
    ) {
      throw new ShipkeyError(
        "INVALID_FIELD_VALUE",
        `${at}.fileSize must be a non-negative integer number of bytes`,
      );
    }
    const sha512 = checkSha512(at, entry.sha512);
    const target = `${entry.platform}/${entry.arch}`;
    if (seen.has(target)) {
      throw new ShipkeyError("DUPLICATE_RELEASE_ENTRY", `${target} appears more than once`);
    }
    seen.add(target);
    return {
      platform: entry.platform,
      arch: entry.arch,
      downloadUrl: entry.downloadUrl,
      signature: signature === undefined || signature === "" ? null : signature,
      fileSize: fileSize ?? null,
      sha512,
    };
  });
  return { releaseNotes: notes === undefined || notes === "" ? null : notes, entries };
}

// Base64 (standard alphabet, padded) of exactly 64 bytes: 86 characters, the last of which
// carries 2 bits (so one of "AQgw"), then "==".
const sha512Base64 = /^[A-Za-z0-9+/]{85}[AQgw]==$/;

/** The optional `sha512`: base64 of a SHA-512 digest, as electron-builder writes it, or null. */
function checkSha512(at: string, value: unknown): string | null {
  if (value === undefined || value === null || value === "") return null;
  if (typeof value !== "string") {
    throw new ShipkeyError("INVALID_FIELD_TYPE", `${at}.sha512 must be a string`);
  }
  if (!sha512Base64.test(value)) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `${at}.sha512 must be the base64 of a 64-byte SHA-512 digest`,
    );
  }
  return value;
}

/** A publish that passed every check: what writeRelease writes. */
export interface CheckedPublish {
  version: string;
  channel: Channel;
  releaseNotes: string | null;
  entries: ReleaseEntry[];
}

/**
 * Checks the signatures against the product's Tauri key, if it has one, then writes every entry
 * or none, in one transaction. The service publishes through publishReleaseAudited
 * (audited-actions), which adds the audit entry to that transaction.
 */
export async function publishRelease(
  db: Kysely<DB>,
  product: Product,
  request: CheckedPublish,
  now = Date.now(),
): Promise<PublishResult> {
  checkTauriSignatures(product.tauriPublicKey, request.entries);
  return inTransaction(db, (trx) => writeRelease(trx, product, request, now));
}

/**
 * Writes a checked publish (the signatures included) in the caller's transaction. The version
 * row is upserted first, so concurrent publishes of one version queue on its row and never
 * deadlock on the entries. Each entry's `revision` tells, atomically, whether this upsert
 * created or replaced it.
 */
export async function writeRelease(
  trx: Transaction<DB>,
  product: Product,
  request: CheckedPublish,
  now = Date.now(),
): Promise<PublishResult> {
  const [version] = (
    await upsertVersion(trx, {
      id: newId("ver"),
      product_id: product.id,
      version: request.version,
      channel: request.channel,
      release_notes: request.releaseNotes,
      sort_key: versionSortKey(request.version),
      now,
    })
  ).rows;
  if (!version) throw new Error("upserting a release version returned no row");

  const releases: PublishResult["releases"] = [];
  for (const entry of request.entries) {
    const [written] = (
      await upsertArtifact(trx, {
        id: newId("art"),
        version_id: version.id,
        platform: entry.platform,
        arch: entry.arch,
        download_url: entry.downloadUrl,
        signature: entry.signature,
        file_size: entry.fileSize,
        sha512: entry.sha512 ?? null,
        now,
      })
    ).rows;
    if (!written) throw new Error("upserting a release artifact returned no row");
    releases.push({
      platform: entry.platform,
      arch: entry.arch,
      status: written.revision === 1 ? "created" : "updated",
    });
  }
  return { product: product.name, version: request.version, channel: request.channel, releases };
}

const upsertVersion = compileOnce<
  Omit<ReleaseVersionsTable, "created_at" | "updated_at" | "yanked_at" | "sort_key"> & {
    sort_key: string;
    now: number;
  },
  Pick<ReleaseVersionsTable, "id">
>(["id", "product_id", "version", "channel", "release_notes", "sort_key", "now"], (db, p) =>
  db
    .insertInto("release_versions")
    .values({
      id: p.id,
      product_id: p.product_id,
      version: p.version,
      channel: p.channel,
      release_notes: p.release_notes,
      sort_key: p.sort_key,
      created_at: p.now,
      updated_at: p.now,
    })
    .onConflict((oc) =>
      oc.columns(["product_id", "version"]).doUpdateSet({
        channel: p.channel,
        release_notes: p.release_notes,
        updated_at: p.now,
      }),
    )
    .returning("id"),
);

// `revision` tells, atomically, whether the upsert created the entry (1) or replaced it.
const upsertArtifact = compileOnce<
  Omit<ReleaseArtifactsTable, "revision" | "created_at" | "updated_at"> & { now: number },
  Pick<ReleaseArtifactsTable, "revision">
>(
  [
    "id",
    "version_id",
    "platform",
    "arch",
    "download_url",
    "signature",
    "file_size",
    "sha512",
    "now",
  ],
  (db, p) =>
    db
      .insertInto("release_artifacts")
      .values({
        id: p.id,
        version_id: p.version_id,
        platform: p.platform,
        arch: p.arch,
        download_url: p.download_url,
        signature: p.signature,
        file_size: p.file_size,
        sha512: p.sha512,
        revision: 1,
        created_at: p.now,
        updated_at: p.now,
      })
      .onConflict((oc) =>
        oc.columns(["version_id", "platform", "arch"]).doUpdateSet((eb) => ({
          download_url: p.download_url,
          signature: p.signature,
          file_size: p.file_size,
          sha512: p.sha512,
          revision: eb(eb.ref("release_artifacts.revision"), "+", 1),
          updated_at: p.now,
        })),
      )
      .returning("revision"),
);
