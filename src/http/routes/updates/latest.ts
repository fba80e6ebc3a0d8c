import { findLatestRelease, parseCurrentVersion } from "../../../domain/releases/update-feed.js";
import { ShipkeyError } from "../../../errors.js";
import { latest } from "../../../contracts/releases.js";
import { type App, documentationOnly, routeSchema } from "../../contract-route.js";
import { missingFields } from "../../request-fields.js";
import {
  type FeedDeps,
  archNames,
  fromFeedName,
  platformNames,
  openFeed,
  parseChannel,
  queryParam,
} from "./feed-request.js";

/**
 * The newest release for a platform and arch, for any client. With currentVersion, 204 when
 * nothing is newer; without it, 404 when the product has no release there at all.
 */
export function latestFeedRoute(app: App, deps: FeedDeps): void {
  app.get(
    latest.url,
    { schema: routeSchema(latest), validatorCompiler: documentationOnly },
    async (request, reply) => {
      const { productSlug } = request.params;
      const platform = queryParam(request.query, "platform");
      const arch = queryParam(request.query, "arch");
      if (platform === undefined || arch === undefined) {
        const names = ["platform", "arch"];
        throw missingFields(names.filter((name) => queryParam(request.query, name) === undefined));
      }
      const channel = parseChannel(queryParam(request.query, "channel"));
      const rawCurrent = queryParam(request.query, "currentVersion");
      const currentVersion = rawCurrent === undefined ? undefined : parseCurrentVersion(rawCurrent);
      const storedPlatform = fromFeedName(platformNames, platform, "platform");
      const storedArch = fromFeedName(archNames, arch, "arch");
      const feed = await openFeed(request, deps, {
        productSlug,
        platform: storedPlatform,
        channel,
        currentVersion,
      });
      const release = await findLatestRelease(deps.db, {
        ...feed,
        updateFeed: "generic",
        platform: storedPlatform,
        arch: storedArch,
        channel,
        currentVersion,
      });
      const entry = release?.entries[0];
      if (!release || !entry) {
        if (currentVersion !== undefined) return reply.code(204).send(null);
        throw new ShipkeyError(
          "RELEASE_NOT_FOUND",
          `No ${platform}/${arch} release of ${productSlug}`,
        );
      }
      return {
        version: release.version,
        channel: release.channel,
        notes: release.notes,
        pubDate: new Date(release.publishedAt).toISOString(),
        url: feed.urlOf(release, entry),
        signature: entry.signature,
        sha512: entry.sha512,
        fileSize: entry.fileSize,
        critical: release.critical,
      };
    },
  );
}
