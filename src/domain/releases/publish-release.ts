import type { Transaction } from "kysely";
import type { DB, ReleaseArtifactsTable, ReleaseVersionsTable } from "../../db/schema.js";
import { compileOnce } from "../../db/compiled-query.js";
import { versionSortKey } from "../../lib/version-sort-key.js";
import { ShipkeyError } from "../../errors.js";
import { hasTerminalControl } from "../../lib/control-characters.js";
import { newId } from "../../lib/ids.js";
import { assertMaxLength } from "../limits.js";
import type { Product } from "../products/products.js";
import { type Arch, type Channel, type Platform, limits } from "../../contracts/vocabulary.js";
import type { PublishAnswer } from "../../contracts/releases.js";
import type { ReleaseRollout } from "../../contracts/release-versions.js";
import { readRollout, type RolloutPlan, setCritical, setRollout } from "./rollout.js";
import { serves } from "./feed-rules.js";

/** A publish request that passed the spec's checks (section 7, in order). */
/**
 * A publish as the route parsed it: every field of its type, "" and absent optional fields as
 * null; the documented limits are not yet checked.
 */
export interface PublishRequest {
  productSlug: string;
  /** Already stripped of its leading "v" and checked as strict semver. */
  version: string;
  channel: Channel;
  releaseNotes: string | null;
  releases: ReleaseEntry[];
  /** Publish into a rollout; null: a new version is released to all, a republished one keeps its rollout. */
  rollout: RolloutPlan | null;
  /** Mark the version critical or not; null: unchanged. */
  critical: boolean | null;
}

export interface ReleaseEntry {
  platform: Platform;
  arch: Arch;
  downloadUrl: string;
  signature: string | null;
  fileSize: number | null;
  sha512?: string | null;
}

export type PublishResult = PublishAnswer;

/**
 * The documented limits, checked after the spec's own checks (docs/reference/limits.md): every
 * field within its size, no platform+arch twice.
 */
export function checkPublishLimits(request: PublishRequest): {
  releaseNotes: string | null;
  entries: ReleaseEntry[];
} {
  assertMaxLength("version", request.version, limits.identifier);
  const notes = request.releaseNotes;
  assertMaxLength("releaseNotes", notes, limits.releaseNotes);
  if (notes !== null && hasTerminalControl(notes)) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      "releaseNotes must not contain control characters other than tabs and line breaks",
      { field: "releaseNotes" },
    );
  }
  if (request.releases.length > limits.releasesPerPublish) {
    throw new ShipkeyError(
      "TOO_MANY_RELEASES",
      `releases must have at most ${limits.releasesPerPublish} entries`,
      { field: "releases" },
    );
  }
  const seen = new Set<string>();
  request.releases.forEach((entry, index) => {
    const at = `releases[${index}]`;
    assertMaxLength(`${at}.downloadUrl`, entry.downloadUrl, limits.downloadUrl);
    assertMaxLength(`${at}.signature`, entry.signature, limits.signature);
    if (entry.fileSize !== null && !(Number.isSafeInteger(entry.fileSize) && entry.fileSize >= 0)) {
      throw fileSizeInvalid(at);
    }
    if (typeof entry.sha512 === "string" && !sha512Base64.test(entry.sha512)) {
      throw new ShipkeyError(
        "INVALID_FIELD_VALUE",
        `${at}.sha512 must be the base64 of a 64-byte SHA-512 digest`,
        { field: `${at}.sha512` },
      );
    }
    const target = `${entry.platform}/${entry.arch}`;
    if (seen.has(target)) {
      throw new ShipkeyError("DUPLICATE_RELEASE_ENTRY", `${target} appears more than once`, {
        field: at,
      });
    }
    seen.add(target);
  });
  return { releaseNotes: notes, entries: request.releases };
}

export const fileSizeInvalid = (at: string) =>
  new ShipkeyError(
    "INVALID_FIELD_VALUE",
    `${at}.fileSize must be a non-negative integer number of bytes`,
    { field: `${at}.fileSize` },
  );

// Base64 (standard alphabet, padded) of exactly 64 bytes: 86 characters, the last of which
// carries 2 bits (so one of "AQgw"), then "==".
const sha512Base64 = /^[A-Za-z0-9+/]{85}[AQgw]==$/;

/** A publish that passed every check, its notes rendered (renderReleaseNotes): what writeRelease writes. */
export interface CheckedPublish {
  version: string;
  channel: Channel;
  releaseNotes: string | null;
  entries: ReleaseEntry[];
  rollout?: RolloutPlan | null;
  critical?: boolean | null;
}

/**
 * What the vendor should know about a publish that nothing refuses: a Tauri product's entry
 * that the Tauri feed does not serve (feed-rules.ts: one without a signature, which the plugin
 * refuses), though the other feeds and the download page still serve it
 * (docs/reference/publishing-and-releases.md).
 */
export function publishWarnings(product: Product, entries: ReleaseEntry[]): string[] {
  if (product.tauriPublicKey === null) return [];
  return entries.flatMap((entry, index) =>
    !serves("tauri", entry)
      ? [
          `releases[${index}] (${entry.platform}/${entry.arch}) has no signature: the Tauri feed ` +
            "will not offer it (the product has a Tauri key)",
        ]
      : [],
  );
}

/**
 * A publish's rollout and critical mark, in its transaction (after writeRelease): null when the
 * publish set neither (nothing is read), else the version's rollout state before and after both.
 * A new version reads as released to all and not critical before: a rollout in it "started".
 */
export async function applyPublishRollout(
  trx: Transaction<DB>,
  productSlug: string,
  request: CheckedPublish,
  now = Date.now(),
): Promise<{ before: ReleaseRollout; after: ReleaseRollout } | null> {
  if (typeof request.critical !== "boolean" && !request.rollout) return null;
  const before = await readRollout(trx, productSlug, request.version, now);
  let after = before;
  if (typeof request.critical === "boolean") {
    after = await setCritical(trx, productSlug, request.version, request.critical, now);
  }
  if (request.rollout) {
    after = await setRollout(trx, productSlug, request.version, request.rollout, now);
  }
  return { before, after };
}

/**
 * Writes a checked publish (the signatures included) and its rendered notes (renderReleaseNotes,
 * before the transaction: rendering may take up to its deadline) in the caller's transaction. The version
 * row is upserted first, so concurrent publishes of one version queue on its row and never
 * deadlock on the entries. Each entry's `revision` tells, atomically, whether this upsert
 * created or replaced it.
 */
export async function writeRelease(
  trx: Transaction<DB>,
  product: Product,
  request: CheckedPublish,
  notesHtml: string | null,
  now = Date.now(),
): Promise<PublishResult> {
  const [version] = (
    await upsertVersion(trx, {
      id: newId("ver"),
      product_id: product.id,
      version: request.version,
      channel: request.channel,
      release_notes: request.releaseNotes,
      release_notes_html: notesHtml,
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
  Pick<
    ReleaseVersionsTable,
    "id" | "product_id" | "version" | "channel" | "release_notes" | "release_notes_html"
  > & {
    sort_key: string;
    now: number;
  },
  Pick<ReleaseVersionsTable, "id">
>(
  [
    "id",
    "product_id",
    "version",
    "channel",
    "release_notes",
    "release_notes_html",
    "sort_key",
    "now",
  ],
  (db, p) =>
    db
      .insertInto("release_versions")
      .values({
        id: p.id,
        product_id: p.product_id,
        version: p.version,
        channel: p.channel,
        release_notes: p.release_notes,
        release_notes_html: p.release_notes_html,
        sort_key: p.sort_key,
        created_at: p.now,
        updated_at: p.now,
      })
      .onConflict((oc) =>
        oc.columns(["product_id", "version"]).doUpdateSet({
          channel: p.channel,
          release_notes: p.release_notes,
          release_notes_html: p.release_notes_html,
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
