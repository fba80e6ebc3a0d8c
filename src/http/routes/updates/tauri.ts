import { findLatestRelease, parseCurrentVersion } from "../../../domain/releases/update-feed.js";
import { tauri } from "../../../contracts/releases.js";
import { type App, documentationOnly, routeSchema } from "../../contract-route.js";
import { type FeedDeps, fromFeedName, openFeed, parseChannel, queryParam } from "./feed-request.js";
import { type Arch, type Platform } from "../../../contracts/vocabulary.js";

const targets: Record<string, Platform> = { linux: "LINUX", windows: "WINDOWS", darwin: "MACOS" };
const arches: Record<string, Arch> = { x86_64: "X64", aarch64: "ARM64" };
/** Arches the plugin names that Shipkey never stores: no update, not an error. */
const unservedArches = new Set(["i686", "armv7"]);

/**
 * The Tauri v2 updater plugin's dynamic server: 204 when nothing newer exists, else the fields
 * of the plugin's RemoteRelease. Only entries with a signature are offered (the plugin refuses
 * an update without one).
 */
export function tauriFeedRoute(app: App, deps: FeedDeps): void {
  app.get(
    tauri.url,
    { schema: routeSchema(tauri), validatorCompiler: documentationOnly },
    async (request, reply) => {
      const { productSlug, target, arch, currentVersion } = request.params;
      const channel = parseChannel(queryParam(request.query, "channel"));
      queryParam(request.query, "bundle"); // accepted; one entry per platform/arch is stored
      const platform = fromFeedName(targets, target, "target");
      const unserved = unservedArches.has(arch);
      const storedArch = unserved ? undefined : fromFeedName(arches, arch, "arch");
      const current = parseCurrentVersion(currentVersion);
      const feed = await openFeed(request, deps, {
        productSlug,
        platform,
        channel,
        currentVersion: current,
      });
      if (storedArch === undefined) return reply.code(204).send(null);
      const release = await findLatestRelease(deps.db, {
        ...feed,
        platform,
        arch: storedArch,
        channel,
        currentVersion: current,
        updateFeed: "tauri",
      });
      const entry = release?.entries[0];
      if (!release || !entry || entry.signature === null) return reply.code(204).send(null);
      return {
        version: release.version,
        notes: release.notes,
        pub_date: new Date(release.publishedAt).toISOString(),
        url: feed.urlOf(release, entry),
        signature: entry.signature,
        critical: release.critical,
      };
    },
  );
}
