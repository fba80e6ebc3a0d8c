import { findDownload, parseCurrentVersion } from "../../../domain/releases/update-feed.js";
import { download, downloadNamed } from "../../../contracts/releases.js";
import { type App, publicRoute } from "../../contract-route.js";
import { admit, type FeedDeps, archNames, fromFeedName, platformNames } from "./feed-request.js";

/**
 * The counted download: 302 to the stored URL of a version's build. The feeds hand this URL out
 * when the product asks for it, with the stored file name as a last segment, which is ignored
 * here. Licensed updates apply as on the feeds; a HEAD request is answered but not counted.
 */
export function downloadRoutes(app: App, deps: FeedDeps): void {
  for (const route of [download, downloadNamed]) {
    app.get(
      route.url,
      // Read by its contract (request-reader.ts).
      publicRoute(route),
      async (request, reply) => {
        const { productSlug } = request.params;
        const version = parseCurrentVersion(request.params.version, "version");
        const platform = fromFeedName(platformNames, request.params.platform, "platform");
        const arch = fromFeedName(archNames, request.params.arch, "arch");
        const now = Date.now();
        const { product, publishedUpTo } = await admit(request, deps.db, productSlug, now);
        const download = await findDownload(deps.db, {
          product,
          publishedUpTo,
          version,
          platform,
          arch,
        });
        const file = "file" in request.params ? String(request.params.file) : "";
        // electron-updater's differential download asks for the file's URL + ".blockmap".
        if (file.toLowerCase().endsWith(".blockmap")) {
          return reply.redirect(blockmapUrl(download.downloadUrl), 302);
        }
        if (request.method === "GET") deps.counts.countDownload(download.versionId, platform, now);
        return reply.redirect(download.downloadUrl, 302);
      },
    );
  }
}

/** The blockmap electron-builder writes beside a file: its path + ".blockmap", query kept. */
function blockmapUrl(downloadUrl: string): string {
  const url = new URL(downloadUrl);
  url.pathname += ".blockmap";
  return url.href;
}
