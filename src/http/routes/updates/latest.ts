import type { FastifyInstance } from "fastify";
import { arches, platforms } from "../../../db/schema.js";
import { findLatestRelease, parseCurrentVersion } from "../../../domain/releases/update-feed.js";
import { ShipkeyError } from "../../../errors.js";
import { documentationOnly, failure } from "../public-schemas.js";
import { missingFields } from "../../request-fields.js";
import {
  channelQuery,
  type FeedDeps,
  archNames,
  fromFeedName,
  licenseQuery,
  platformNames,
  openFeed,
  parseChannel,
  type ProductParams,
  productSlugParam,
  queryParam,
} from "./feed-request.js";

/**
 * The newest release for a platform and arch, for any client. With currentVersion, 204 when
 * nothing is newer; without it, 404 when the product has no release there at all.
 */
export function latestFeedRoute(app: FastifyInstance, deps: FeedDeps): void {
  app.get<{ Params: ProductParams }>(
    "/api/updates/:productSlug/latest",
    { schema: latestSchema, validatorCompiler: documentationOnly },
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
      const storedPlatform = fromFeedName(platformNames, platform);
      const storedArch = fromFeedName(archNames, arch);
      const feed = await openFeed(request, deps, {
        productSlug,
        platform: storedPlatform,
        channel,
        currentVersion,
      });
      const release = await findLatestRelease(deps.db, {
        ...feed,
        platform: storedPlatform,
        arch: storedArch,
        channel,
        currentVersion,
      });
      const entry = release?.entries[0];
      if (!release || !entry) {
        if (currentVersion !== undefined) return reply.code(204).send();
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
      };
    },
  );
}

const nullable = (type: string) => ({ type: [type, "null"] });

const latestSchema = {
  summary: "The newest release (generic JSON)",
  params: { type: "object", required: ["productSlug"], properties: { ...productSlugParam } },
  querystring: {
    type: "object",
    required: ["platform", "arch"],
    properties: {
      platform: { type: "string", enum: platforms },
      arch: { type: "string", enum: arches },
      ...channelQuery,
      currentVersion: { type: "string", description: "Semver; with it, 204 when nothing is newer" },
      ...licenseQuery,
    },
  },
  response: {
    200: {
      type: "object",
      properties: {
        version: { type: "string" },
        channel: { type: "string", enum: ["STABLE", "BETA", "ALPHA"] },
        notes: nullable("string"),
        pubDate: { type: "string", format: "date-time" },
        url: { type: "string" },
        signature: nullable("string"),
        sha512: nullable("string"),
        fileSize: nullable("integer"),
      },
    },
    204: { type: "null", description: "Nothing newer than currentVersion" },
    "4xx": failure(),
  },
};
