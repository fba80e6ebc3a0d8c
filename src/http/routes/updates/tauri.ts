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
import { type Arch, type Platform } from "../../../contracts/vocabulary.js";

const targets: Record<string, Platform> = { linux: "LINUX", windows: "WINDOWS", darwin: "MACOS" };
const arches: Record<string, Arch> = { x86_64: "X64", aarch64: "ARM64" };
/** Arches the plugin names that Shipkey never stores: no update, not an error. */
const unservedArches = new Set(["i686", "armv7"]);

interface Params extends ProductParams {
  target: string;
  arch: string;
  currentVersion: string;
}

/**
 * The Tauri v2 updater plugin's dynamic server: 204 when nothing newer exists, else the fields
 * of the plugin's RemoteRelease. Only entries with a signature are offered (the plugin refuses
 * an update without one).
 */
export function tauriFeedRoute(app: FastifyInstance, deps: FeedDeps): void {
  app.get<{ Params: Params }>(
    "/api/updates/:productSlug/tauri/:target/:arch/:currentVersion",
    {
      schema: tauriSchema,
      validatorCompiler: documentationOnly,
    },
    async (request, reply) => {
      const { productSlug, target, arch, currentVersion } = request.params;
      const channel = parseChannel(queryParam(request.query, "channel"));
      queryParam(request.query, "bundle"); // accepted; one entry per platform/arch is stored
      const platform = fromFeedName(targets, target);
      const unserved = unservedArches.has(arch);
      const storedArch = unserved ? undefined : fromFeedName(arches, arch);
      const current = parseCurrentVersion(currentVersion);
      const feed = await openFeed(request, deps, {
        productSlug,
        platform,
        channel,
        currentVersion: current,
      });
      if (storedArch === undefined) return reply.code(204).send();
      const release = await findLatestRelease(deps.db, {
        ...feed,
        platform,
        arch: storedArch,
        channel,
        currentVersion: current,
        needs: "signature",
      });
      const entry = release?.entries[0];
      if (!release || !entry) return reply.code(204).send();
      return {
        version: release.version,
        notes: release.notes,
        pub_date: new Date(release.publishedAt).toISOString(),
        url: feed.urlOf(release, entry),
        signature: entry.signature,
      };
    },
  );
}

const tauriSchema = {
  summary: "Tauri v2 updater (dynamic server)",
  description:
    "plugins.updater.endpoints: https://<server>/api/updates/<product>/tauri/{{target}}/{{arch}}/{{current_version}}",
  params: {
    type: "object",
    required: ["productSlug", "target", "arch", "currentVersion"],
    properties: {
      ...productSlugParam,
      target: { type: "string", enum: ["linux", "windows", "darwin"] },
      arch: { type: "string", enum: ["x86_64", "aarch64", "i686", "armv7"] },
      currentVersion: { type: "string", description: "Semver; a leading v is accepted" },
    },
  },
  querystring: {
    type: "object",
    properties: {
      ...channelQuery,
      bundle: { type: "string", description: "Accepted, unused" },
      ...licenseQuery,
    },
  },
  response: {
    200: {
      type: "object",
      properties: {
        version: { type: "string" },
        notes: { type: ["string", "null"] },
        pub_date: { type: "string", format: "date-time" },
        url: { type: "string" },
        signature: { type: "string" },
      },
    },
    204: { type: "null", description: "No newer release" },
    "4xx": failure(),
  },
};
