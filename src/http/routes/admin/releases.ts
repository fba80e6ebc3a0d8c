import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import { inTransaction } from "../../../db/in-transaction.js";
import type { Arch, DB, Platform } from "../../../db/schema.js";
import { arches, platforms } from "../../../db/schema.js";
import { recordAudit } from "../../../domain/audit/audit-log.js";
import { deleteRelease, listReleases } from "../../../domain/releases/manage-releases.js";
import { actorOf, requireScope } from "../../admin-auth.js";
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

  app.get<{ Params: { slug: string } }>(
    "/api/admin/products/:slug/releases",
    { onRequest: read, schema: { params: slugParam } },
    async (request) => ({ items: await listReleases(db, request.params.slug) }),
  );

  app.delete<{ Params: { slug: string; version: string } }>(
    "/api/admin/products/:slug/releases/:version",
    { onRequest: write, schema: { params: versionParams } },
    async (request) => {
      const { slug, version } = request.params;
      await inTransaction(db, async (trx) => {
        await deleteRelease(trx, slug, version);
        await recordAudit(trx, actorOf(request), "release.delete", {
          type: "release",
          id: `${slug}@${version}`,
        });
      });
      return { deleted: true, product: slug, version };
    },
  );

  app.delete<{ Params: { slug: string; version: string; platform: Platform; arch: Arch } }>(
    "/api/admin/products/:slug/releases/:version/:platform/:arch",
    {
      onRequest: write,
      schema: { params: { ...versionParams, required: ["slug", "version", "platform", "arch"] } },
    },
    async (request) => {
      const { slug, version, platform, arch } = request.params;
      await inTransaction(db, async (trx) => {
        await deleteRelease(trx, slug, version, { platform, arch });
        await recordAudit(
          trx,
          actorOf(request),
          "release.delete_entry",
          { type: "release", id: `${slug}@${version}` },
          {
            platform,
            arch,
          },
        );
      });
      return { deleted: true, product: slug, version, platform, arch };
    },
  );
}
