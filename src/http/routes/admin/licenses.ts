import type { FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import {
  createLicense,
  getLicense,
  type LicenseSettingsBody,
  listLicenses,
  reinstateLicense,
  revokeLicense,
  suspendLicense,
  updateLicense,
} from "../../../contracts/licenses.js";
import { deactivateMachine, endOfflinePlace, listMachines } from "../../../contracts/machines.js";
import { licenseSettings } from "../../../contracts/license-settings.js";
import * as seats from "../../../contracts/seats.js";
import { pageLimits } from "../../../contracts/vocabulary.js";
import type { DB } from "../../../db/schema.js";
import * as actions from "../../../actions/licenses.js";
import { listLicenses as listLicenseViews } from "../../../domain/licenses/list-licenses.js";
import type { LicenseSettings } from "../../../domain/licenses/manage-licenses.js";
import { embeddedMachines, showLicense } from "../../../domain/licenses/show-license.js";
import { ShipkeyError } from "../../../errors.js";
import { parseIsoTimestamp } from "../../../lib/time.js";
import { productIdsOf, requireActor, requireProductInKey } from "../../admin-auth.js";
import { adminRoute, type App } from "../../contract-route.js";

/** The body's settings as the domain takes them: expiresAt ISO text → epoch ms. */
function toSettings<B extends LicenseSettingsBody>(
  body: B,
): Omit<B, "expiresAt"> & Pick<LicenseSettings, "expiresAt"> {
  const { expiresAt, ...rest } = body;
  if (expiresAt === undefined || expiresAt === null) return { ...rest, expiresAt };
  const ms = parseIsoTimestamp(expiresAt);
  if (ms === null) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `expiresAt must be ${licenseSettings.expiresAt.says}`,
      { field: "expiresAt" },
    );
  }
  return { ...rest, expiresAt: ms };
}

export function adminLicenseRoutes(app: App, db: Kysely<DB>): void {
  // A key limited to products reaches only their licenses.
  const inKey = requireProductInKey<FastifyRequest<{ Params: { licenseKey: string } }>>(
    db,
    (r) => ({ licenseKey: r.params.licenseKey }),
  );

  app.get(listLicenses.url, { ...adminRoute(db, listLicenses) }, async (request) => {
    const { expired, limit, ...filter } = request.query;
    return listLicenseViews(db, {
      ...filter,
      productIds: productIdsOf(request),
      expired: expired === undefined ? undefined : expired === "true",
      limit: Math.min(limit === undefined ? pageLimits.default : Number(limit), pageLimits.max),
    });
  });

  app.post(
    createLicense.url,
    {
      ...adminRoute(db, createLicense),
      preHandler: requireProductInKey<FastifyRequest<{ Body: { productSlug: string } }>>(
        db,
        (r) => ({ productSlug: r.body.productSlug }),
      ),
    },
    async (request, reply) => {
      const license = await actions.createLicense(
        db,
        requireActor(request),
        toSettings(request.body),
        request.idempotencyClaim,
      );
      return reply.status(201).send(license);
    },
  );

  app.get(getLicense.url, { ...adminRoute(db, getLicense), preHandler: inKey }, async (request) =>
    showLicense(db, request.params.licenseKey),
  );

  app.patch(
    updateLicense.url,
    { ...adminRoute(db, updateLicense), preHandler: inKey },
    async (request) =>
      actions.updateLicense(
        db,
        requireActor(request),
        request.params.licenseKey,
        toSettings(request.body),
        request.idempotencyClaim,
      ),
  );

  const statusChanges = [
    [suspendLicense, "SUSPENDED"],
    [revokeLicense, "REVOKED"],
    [reinstateLicense, "ACTIVE"],
  ] as const;
  for (const [change, status] of statusChanges) {
    app.post(change.url, { ...adminRoute(db, change), preHandler: inKey }, async (request) =>
      actions.setLicenseStatus(
        db,
        requireActor(request),
        request.params.licenseKey,
        status,
        request.idempotencyClaim,
      ),
    );
  }

  app.get(
    listMachines.url,
    { ...adminRoute(db, listMachines), preHandler: inKey },
    async (request) => {
      const { limit, cursor } = request.query;
      const license = await showLicense(db, request.params.licenseKey, Date.now(), {
        cursor,
        limit: Math.min(limit === undefined ? embeddedMachines : Number(limit), pageLimits.max),
      });
      return {
        items: license.machines,
        nextCursor: license.machinesNextCursor,
        total: license.activeMachines,
        past: license.pastActivations,
      };
    },
  );

  app.delete(
    deactivateMachine.url,
    {
      ...adminRoute(db, deactivateMachine),
      preHandler: inKey,
    },
    async (request) => {
      const { licenseKey, machineId } = request.params;
      await actions.deactivateMachineByAdmin(
        db,
        requireActor(request),
        licenseKey,
        machineId,
        request.idempotencyClaim,
      );
      return { deactivated: true, licenseKey, machineId } as const;
    },
  );

  app.delete(
    endOfflinePlace.url,
    { ...adminRoute(db, endOfflinePlace), preHandler: inKey },
    async (request) => {
      const { licenseKey, machineId } = request.params;
      const { endsAt } = await actions.endOfflinePlace(
        db,
        requireActor(request),
        licenseKey,
        machineId,
        request.idempotencyClaim,
      );
      return { ended: true, licenseKey, machineId, endsAt } as const;
    },
  );

  app.post(
    seats.resetMachines.url,
    { ...adminRoute(db, seats.resetMachines), preHandler: inKey },
    async (request) =>
      actions.resetMachines(
        db,
        requireActor(request),
        request.params.licenseKey,
        request.idempotencyClaim,
      ),
  );

  app.post(
    seats.moveLicense.url,
    {
      ...adminRoute(db, seats.moveLicense),
      // A limited key must hold the license's product and the one it moves to.
      preHandler: [
        inKey,
        requireProductInKey<FastifyRequest<{ Body: { productSlug: string } }>>(db, (r) => ({
          productSlug: r.body.productSlug,
        })),
      ],
    },
    async (request) =>
      actions.moveLicense(
        db,
        requireActor(request),
        request.params.licenseKey,
        request.body.productSlug,
        request.idempotencyClaim,
      ),
  );

  app.delete(
    seats.deleteLicense.url,
    { ...adminRoute(db, seats.deleteLicense), preHandler: inKey },
    async (request) => {
      const { licenseKey } = request.params;
      const license = await actions.deleteLicense(
        db,
        requireActor(request),
        licenseKey,
        request.idempotencyClaim,
      );
      return { deleted: true, licenseKey, product: license.product } as const;
    },
  );
}
