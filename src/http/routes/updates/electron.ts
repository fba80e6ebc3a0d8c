import { Document, isScalar, Scalar } from "yaml";
import { findLatestRelease, type FeedRelease } from "../../../domain/releases/update-feed.js";
import { type Audience, rolloutPercent } from "../../../domain/releases/rollout.js";
import { ShipkeyError } from "../../../errors.js";
import { electron } from "../../../contracts/releases.js";
import { type App, documentationOnly, routeSchema } from "../../contract-route.js";
import { type FeedDeps, type OpenFeed, openFeed, sendDocument } from "./feed-request.js";
import { type Arch, type Channel, type Platform } from "../../../contracts/vocabulary.js";

const fileChannels: Record<string, Channel> = { latest: "STABLE", beta: "BETA", alpha: "ALPHA" };
/**
 * The file's platform suffix, as electron-updater asks for it: none on Windows and `-mac` (every
 * arch in one file; the updater picks its own), and on Linux one file per arch, as
 * electron-builder writes them: `-linux` is x64, `-linux-arm64` ARM64 (electron-updater appends
 * `-{process.arch}` on Linux for any arch but x64, and its AppImage updater would otherwise fall
 * back to the first file listed, whatever its arch).
 */
const fileTargets: Record<string, { platform: Platform; arch?: Arch }> = {
  "": { platform: "WINDOWS" },
  "-mac": { platform: "MACOS" },
  "-linux": { platform: "LINUX", arch: "X64" },
  "-linux-arm64": { platform: "LINUX", arch: "ARM64" },
};
const fileName = /^(latest|beta|alpha)(-mac|-linux|-linux-arm64)?\.yml$/;

/**
 * electron-updater's `generic` provider: `{ch}.yml`, `{ch}-mac.yml`, `{ch}-linux.yml` and
 * `{ch}-linux-arm64.yml`, as electron-builder writes them. Only entries with a sha512 are listed (electron-updater refuses a
 * file without one); a product with none is a 404, which electron-updater reports as no update.
 */
export function electronFeedRoute(app: App, deps: FeedDeps): void {
  app.get(
    electron.url,
    { schema: routeSchema(electron), validatorCompiler: documentationOnly },
    async (request, reply) => {
      const { productSlug, file } = request.params;
      const match = fileName.exec(file);
      const channel = match && fileChannels[match[1] ?? ""];
      const target = match && fileTargets[match[2] ?? ""];
      if (!channel || !target) {
        throw new ShipkeyError("ROUTE_NOT_FOUND", `No feed file ${file}`);
      }
      const { platform } = target;
      const feed = await openFeed(request, deps, { productSlug, platform, channel });
      const release = await findLatestRelease(deps.db, {
        ...feed,
        ...target,
        channel,
        updateFeed: "electron",
        audience: stagingAudience(request.headers["x-user-staging-id"]),
      });
      if (!release) {
        throw new ShipkeyError("RELEASE_NOT_FOUND", `No release of ${productSlug} for ${file}`);
      }
      return sendDocument(
        request,
        reply,
        "application/yaml; charset=utf-8",
        updateInfo(release, feed),
      );
    },
  );
}

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * electron-updater sends its staging id (a UUID kept in the app's user data) in
 * `x-user-staging-id`, and takes a version with `stagingPercentage` only when the id's last four
 * bytes, read as an unsigned 32-bit integer over 0xffffffff, are below that share
 * (AppUpdater.isStagingMatch). With the id, the server makes the same test and gives a machine
 * outside the newest version it would take; without it, the client decides alone.
 */
export function stagingAudience(header: string | string[] | undefined): Audience {
  if (typeof header !== "string" || !uuid.test(header)) return "client";
  const bytes = Buffer.from(header.replaceAll("-", ""), "hex");
  return { stagingShare: bytes.readUInt32BE(12) / 0xffffffff };
}

/** electron-builder's UpdateInfo, fields in the order it writes them. */
function updateInfo(release: FeedRelease, feed: OpenFeed): string {
  const files = release.entries.map((entry) => ({
    url: feed.urlOf(release, entry),
    sha512: entry.sha512,
    ...(entry.fileSize === null ? {} : { size: entry.fileSize }),
  }));
  const first = files[0];
  const doc = new Document({
    version: release.version,
    files,
    path: first?.url,
    sha512: first?.sha512,
    releaseDate: new Date(release.publishedAt).toISOString(),
    ...(release.notes === null ? {} : { releaseNotes: release.notes }),
    // electron-builder's field: electron-updater offers the version to that share of machines.
    ...(release.rollout === null || release.critical
      ? {}
      : { stagingPercentage: rolloutPercent(release.rollout, feed.now) }),
    // Not electron-builder's: the app reads it from the update-available event's UpdateInfo.
    ...(release.critical ? { critical: true } : {}),
  });
  // Quoted, as electron-builder writes it: js-yaml (electron-updater's parser) would otherwise
  // read the timestamp as a Date.
  const releaseDate = doc.get("releaseDate", true);
  if (isScalar(releaseDate)) releaseDate.type = Scalar.QUOTE_SINGLE;
  return doc.toString({ lineWidth: 0 });
}
