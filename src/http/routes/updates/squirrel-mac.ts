import { findLatestRelease, parseCurrentVersion } from "../../../domain/releases/update-feed.js";
import { squirrelMac } from "../../../contracts/releases.js";
import { type App, documentationOnly, routeSchema } from "../../contract-route.js";
import {
  archNames,
  type FeedDeps,
  fromFeedName,
  openFeed,
  parseChannel,
  queryParam,
} from "./feed-request.js";

/**
 * Electron's autoUpdater on macOS (Squirrel.Mac): 204 when nothing newer exists, else the JSON
 * Squirrel reads. Squirrel installs whatever a 200 points to, so only a strictly newer version
 * is ever answered.
 */
export function squirrelMacFeedRoute(app: App, deps: FeedDeps): void {
  app.get(
    squirrelMac.url,
    { schema: routeSchema(squirrelMac), validatorCompiler: documentationOnly },
    async (request, reply) => {
      const { productSlug, arch, currentVersion } = request.params;
      const channel = parseChannel(queryParam(request.query, "channel"));
      const storedArch = fromFeedName(archNames, arch, "arch");
      const current = parseCurrentVersion(currentVersion);
      const check = { productSlug, platform: "MACOS", channel, currentVersion: current } as const;
      const feed = await openFeed(request, deps, check);
      const release = await findLatestRelease(deps.db, {
        ...feed,
        platform: "MACOS",
        arch: storedArch,
        channel,
        currentVersion: current,
        updateFeed: "squirrelMac",
      });
      const entry = release?.entries[0];
      if (!release || !entry) return reply.code(204).send(null);
      return {
        url: feed.urlOf(release, entry),
        name: release.version,
        notes: release.notes,
        // Squirrel.Mac's pattern (yyyy-MM-dd'T'HH:mm:ssZZZZZ) has no fraction of a second.
        pub_date: new Date(release.publishedAt).toISOString().replace(/\.\d{3}Z$/, "Z"),
      };
    },
  );
}
