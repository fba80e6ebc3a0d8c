import type { FastifyInstance } from "fastify";
import { findLatestRelease, parseCurrentVersion } from "../../../domain/releases/update-feed.js";
import { documentationOnly, failure } from "../public-schemas.js";
import {
  channelQuery,
  type FeedDeps,
  fromFeedName,
  licenseQuery,
  openFeed,
  parseChannel,
  type ProductParams,
  productSlugParam,
  queryParam,
} from "./feed-request.js";
import { type Arch } from "../../../contracts/vocabulary.js";

const arches: Record<string, Arch> = { x64: "X64", arm64: "ARM64" };

interface Params extends ProductParams {
  arch: string;
  currentVersion: string;
}

/**
 * Electron's autoUpdater on macOS (Squirrel.Mac): 204 when nothing newer exists, else the JSON
 * Squirrel reads. Squirrel installs whatever a 200 points to, so only a strictly newer version
 * is ever answered.
 */
export function squirrelMacFeedRoute(app: FastifyInstance, deps: FeedDeps): void {
  app.get<{ Params: Params }>(
    "/api/updates/:productSlug/squirrel-mac/:arch/:currentVersion",
    { schema: squirrelSchema, validatorCompiler: documentationOnly },
    async (request, reply) => {
      const { productSlug, arch, currentVersion } = request.params;
      const channel = parseChannel(queryParam(request.query, "channel"));
      const storedArch = fromFeedName(arches, arch);
      const current = parseCurrentVersion(currentVersion);
      const check = { productSlug, platform: "MACOS", channel, currentVersion: current } as const;
      const feed = await openFeed(request, deps, check);
      const release = await findLatestRelease(deps.db, {
        ...feed,
        platform: "MACOS",
        arch: storedArch,
        channel,
        currentVersion: current,
        needs: "zip",
      });
      const entry = release?.entries[0];
      if (!release || !entry) return reply.code(204).send();
      return {
        url: feed.urlOf(release, entry),
        name: release.version,
        notes: release.notes,
        pub_date: new Date(release.publishedAt).toISOString(),
      };
    },
  );
}

const squirrelSchema = {
  summary: "Electron autoUpdater on macOS (Squirrel.Mac)",
  description:
    "autoUpdater.setFeedURL({url: 'https://<server>/api/updates/<product>/squirrel-mac/<arch>/<version>'})",
  params: {
    type: "object",
    required: ["productSlug", "arch", "currentVersion"],
    properties: {
      ...productSlugParam,
      arch: { type: "string", enum: ["x64", "arm64"] },
      currentVersion: { type: "string", description: "Semver; a leading v is accepted" },
    },
  },
  querystring: { type: "object", properties: { ...channelQuery, ...licenseQuery } },
  response: {
    200: {
      type: "object",
      properties: {
        url: { type: "string" },
        name: { type: "string" },
        notes: { type: ["string", "null"] },
        pub_date: { type: "string", format: "date-time" },
      },
    },
    204: { type: "null", description: "No newer release" },
    "4xx": failure(),
  },
};
