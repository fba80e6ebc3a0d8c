import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { Arch, DB, Platform } from "../../../db/schema.js";
import { arches, platforms } from "../../../db/schema.js";
import {
  deleteReleaseAudited,
  setReleaseYankedAudited,
} from "../../../domain/audit/audited-actions.js";
import { listReleases } from "../../../domain/releases/manage-releases.js";
import { usageReport } from "../../../domain/releases/usage-report.js";
import { actorOf, requireProductInKey, requireScope } from "../../admin-auth.js";
import { slugParam } from "./schemas.js";

const versionParams = {
  type: "object",
  required: ["slug", "version"],
  properties: {
    slug: { type: "string", minLength: 1, maxLength: 255 },
    version: { type: "string", minLength: 1, maxLength: 255 },
    platform: { type: "string", enum: platforms },
    arch: { type: "string", enum: arches },
  },
} as const;

export function adminReleaseRoutes(app: FastifyInstance, db: Kysely<DB>): void {
  const read = requireScope(db, "releases:read");
  const write = requireScope(db, "releases:write");
  // Every route here names its product: a key limited to others is refused.
  const inKey = requireProductInKey<FastifyRequest<{ Params: { slug: string } }>>(db, (r) => ({
    productSlug: r.params.slug,
  }));

  app.get<{ Params: { slug: string } }>(
    "/api/admin/products/:slug/releases",
    { onRequest: read, preHandler: inKey, schema: { params: slugParam } },
    async (request) => ({ items: await listReleases(db, request.params.slug) }),
  );

  app.get<{ Params: { slug: string }; Querystring: { days?: string } }>(
    "/api/admin/products/:slug/usage",
    {
      onRequest: read,
      preHandler: inKey,
      schema: {
        description:
          "Downloads (through /api/downloads) per version and platform, and update checks per client version, platform and channel, summed over the last `days` UTC days (1 to 366, default 30). Counts are written once a second.",
        params: slugParam,
        querystring: {
          type: "object",
          additionalProperties: false,
          properties: { days: { type: "string", pattern: "^[1-9][0-9]{0,2}$" } },
        },
      },
    },
    async (request) => {
      const { days } = request.query;
      return usageReport(db, request.params.slug, days === undefined ? 30 : Number(days));
    },
  );

  app.delete<{ Params: { slug: string; version: string } }>(
    "/api/admin/products/:slug/releases/:version",
    { onRequest: write, preHandler: inKey, schema: { params: versionParams } },
    async (request) => {
      const { slug, version } = request.params;
      await deleteReleaseAudited(db, actorOf(request), slug, version);
      return { deleted: true, product: slug, version };
    },
  );

  for (const action of ["yank", "unyank"] as const) {
    app.post<{ Params: { slug: string; version: string } }>(
      `/api/admin/products/:slug/releases/:version/${action}`,
      { onRequest: write, preHandler: inKey, schema: { params: versionParams } },
      async (request) => {
        const { slug, version } = request.params;
        return setReleaseYankedAudited(db, actorOf(request), slug, version, action === "yank");
      },
    );
  }

  app.delete<{ Params: { slug: string; version: string; platform: Platform; arch: Arch } }>(
    "/api/admin/products/:slug/releases/:version/:platform/:arch",
    {
      onRequest: write,
      preHandler: inKey,
      schema: { params: { ...versionParams, required: ["slug", "version", "platform", "arch"] } },
    },
    async (request) => {
      const { slug, version, platform, arch } = request.params;
      await deleteReleaseAudited(db, actorOf(request), slug, version, { platform, arch });
      return { deleted: true, product: slug, version, platform, arch };
    },
  );
}
