import type { FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import * as contracts from "../../../contracts/release-versions.js";
import { usageReportDays } from "../../../contracts/vocabulary.js";
import type { DB } from "../../../db/schema.js";
import * as actions from "../../../actions/releases.js";
import { listReleases } from "../../../domain/releases/manage-releases.js";
import { usageReport } from "../../../domain/releases/usage-report.js";
import { requireActor, requireProductInKey } from "../../admin-auth.js";
import { adminRoute, type App } from "../../contract-route.js";

export function adminReleaseRoutes(app: App, db: Kysely<DB>): void {
  // Every route here names its product: a key limited to others is refused.
  const inKey = requireProductInKey<FastifyRequest<{ Params: { slug: string } }>>(db, (r) => ({
    productSlug: r.params.slug,
  }));

  app.get(
    contracts.listReleases.url,
    { ...adminRoute(db, contracts.listReleases), preHandler: inKey },
    async (request) => ({ items: await listReleases(db, request.params.slug) }),
  );

  app.get(
    contracts.usage.url,
    { ...adminRoute(db, contracts.usage), preHandler: inKey },
    async (request) => {
      const { days } = request.query;
      const window = days === undefined ? usageReportDays.default : Number(days);
      return usageReport(db, request.params.slug, window);
    },
  );

  app.delete(
    contracts.deleteRelease.url,
    { ...adminRoute(db, contracts.deleteRelease), preHandler: inKey },
    async (request) => {
      const { slug, version } = request.params;
      await actions.deleteRelease(
        db,
        requireActor(request),
        slug,
        version,
        undefined,
        request.idempotencyClaim,
      );
      return { deleted: true, product: slug, version } as const;
    },
  );

  for (const change of [contracts.yankRelease, contracts.unyankRelease]) {
    app.post(change.url, { ...adminRoute(db, change), preHandler: inKey }, async (request) => {
      const { slug, version } = request.params;
      const yank = change === contracts.yankRelease;
      return actions.setReleaseYanked(
        db,
        requireActor(request),
        slug,
        version,
        yank,
        request.idempotencyClaim,
      );
    });
  }

  app.post(
    contracts.startRollout.url,
    { ...adminRoute(db, contracts.startRollout), preHandler: inKey },
    async (request) => {
      const { slug, version } = request.params;
      return actions.setRollout(
        db,
        requireActor(request),
        slug,
        version,
        request.body,
        request.idempotencyClaim,
      );
    },
  );

  const changes = [
    [contracts.pauseRollout, "pause"],
    [contracts.resumeRollout, "resume"],
    [contracts.completeRollout, "complete"],
  ] as const;
  for (const [change, action] of changes) {
    app.post(change.url, { ...adminRoute(db, change), preHandler: inKey }, async (request) => {
      const { slug, version } = request.params;
      return actions.changeRollout(
        db,
        requireActor(request),
        slug,
        version,
        action,
        request.idempotencyClaim,
      );
    });
  }

  app.post(
    contracts.setCritical.url,
    { ...adminRoute(db, contracts.setCritical), preHandler: inKey },
    async (request) => {
      const { slug, version } = request.params;
      return actions.setCritical(
        db,
        requireActor(request),
        slug,
        version,
        request.body.critical,
        request.idempotencyClaim,
      );
    },
  );

  app.delete(
    contracts.deleteReleaseEntry.url,
    { ...adminRoute(db, contracts.deleteReleaseEntry), preHandler: inKey },
    async (request) => {
      const { slug, version, platform, arch } = request.params;
      await actions.deleteRelease(
        db,
        requireActor(request),
        slug,
        version,
        { platform, arch },
        request.idempotencyClaim,
      );
      return { deleted: true, product: slug, version, platform, arch } as const;
    },
  );
}
