import type { FastifyInstance } from "fastify";
import { findDownload, parseCurrentVersion } from "../../../domain/releases/update-feed.js";
import { documentationOnly, failure } from "../public-schemas.js";
import {
  admit,
  type FeedDeps,
  archNames,
  fromFeedName,
  licenseQuery,
  platformNames,
  type ProductParams,
  productSlugParam,
} from "./feed-request.js";
import { arches, platforms } from "../../../contracts/vocabulary.js";

interface Params extends ProductParams {
  version: string;
  platform: string;
  arch: string;
}

/**
 * The counted download: 302 to the stored URL of a version's build. The feeds hand this URL out
 * when the product asks for it, with the stored file name as a last segment, which is ignored
 * here. Licensed updates apply as on the feeds; a HEAD request is answered but not counted.
 */
export function downloadRoutes(app: FastifyInstance, deps: FeedDeps): void {
  for (const url of [
    "/api/downloads/:productSlug/:version/:platform/:arch",
    "/api/downloads/:productSlug/:version/:platform/:arch/:file",
  ]) {
    app.get<{ Params: Params }>(
      url,
      {
        schema: url.endsWith(":file") ? withFile : downloadSchema,
        validatorCompiler: documentationOnly,
      },
      async (request, reply) => {
        const { productSlug } = request.params;
        const version = parseCurrentVersion(request.params.version, "version");
        const platform = fromFeedName(platformNames, request.params.platform.toUpperCase());
        const arch = fromFeedName(archNames, request.params.arch.toUpperCase());
        const now = Date.now();
        const { product, publishedUpTo } = await admit(request, deps.db, productSlug, now);
        const download = await findDownload(deps.db, {
          product,
          publishedUpTo,
          version,
          platform,
          arch,
        });
        if (request.method === "GET") deps.counts.countDownload(download.versionId, platform, now);
        return reply.redirect(download.downloadUrl, 302);
      },
    );
  }
}

const downloadParams = {
  ...productSlugParam,
  version: { type: "string", description: "The version, as published" },
  platform: { type: "string", enum: platforms },
  arch: { type: "string", enum: arches },
};

const downloadSchema = {
  summary: "Download a build (counted redirect)",
  description:
    "302 to the stored download URL of a version's build; counted per version, platform and day. " +
    "Yanked versions are 404.",
  params: {
    type: "object",
    required: ["productSlug", "version", "platform", "arch"],
    properties: downloadParams,
  },
  querystring: { type: "object", properties: { ...licenseQuery } },
  response: {
    302: { type: "null", description: "Location: the stored download URL" },
    "4xx": failure(),
  },
};

const withFile = {
  ...downloadSchema,
  summary: "Download a build (counted redirect, named)",
  description: `${downloadSchema.description} The last segment (the stored file name, which updaters name the downloaded file after) is ignored.`,
  params: {
    type: "object",
    required: ["productSlug", "version", "platform", "arch", "file"],
    properties: { ...downloadParams, file: { type: "string" } },
  },
};
