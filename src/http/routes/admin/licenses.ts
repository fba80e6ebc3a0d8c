import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB, LicenseStatus } from "../../../db/schema.js";
import {
  createLicenseAudited,
  deactivateMachineAudited,
  setLicenseStatusAudited,
  updateLicenseAudited,
} from "../../../domain/audit/audited-actions.js";
import {
  type LicenseSettings,
  listLicenses,
  showLicense,
} from "../../../domain/licenses/manage-licenses.js";
import { pageLimits } from "../../../domain/pagination.js";
import { ShipkeyError } from "../../../errors.js";
import { parseIsoTimestamp } from "../../../lib/time.js";
import { actorOf, productIdsOf, requireProductInKey, requireScope } from "../../admin-auth.js";
import { licenseKeyParam, licenseSettingsProperties, pageQuery } from "./schemas.js";

interface SettingsBody {
  status?: LicenseStatus;
  expiresAt?: string | null;
  maxMachines?: number;
  edition?: string | null;
  editionName?: string | null;
  features?: string[];
  customerName?: string | null;
  customerEmail?: string | null;
  note?: string | null;
  externalId?: string | null;
  maxDeactivationsPer30Days?: number | null;
}

/** The body's settings as the domain takes them; expiresAt ISO text → epoch ms. */
function toSettings(body: SettingsBody): LicenseSettings {
  const { expiresAt, ...rest } = body;
  if (expiresAt === undefined || expiresAt === null) return { ...rest, expiresAt };
  const ms = parseIsoTimestamp(expiresAt);
  if (ms === null) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      "expiresAt must be an ISO 8601 timestamp with a zone, or null",
      { field: "expiresAt" },
    );
  }
  return { ...rest, expiresAt: ms };
}

export function adminLicenseRoutes(app: FastifyInstance, db: Kysely<DB>): void {
  const read = requireScope(db, "licenses:read");
  const write = requireScope(db, "licenses:write");
  // A key limited to products reaches only their licenses.
  const inKey = requireProductInKey<FastifyRequest<{ Params: { licenseKey: string } }>>(
    db,
    (r) => ({ licenseKey: r.params.licenseKey }),
  );

  app.get<{
    Querystring: {
      product?: string;
      status?: LicenseStatus;
      expired?: "true" | "false";
      q?: string;
      externalId?: string;
      limit?: string;
      cursor?: string;
    };
  }>(
    "/api/admin/licenses",
    {
      onRequest: read,
      schema: {
        querystring: {
          type: "object",
          additionalProperties: false,
          properties: {
            product: { type: "string", maxLength: 255 },
            status: { type: "string", enum: ["ACTIVE", "SUSPENDED", "REVOKED"] },
            expired: { type: "string", enum: ["true", "false"] },
            q: { type: "string", maxLength: 255 },
            externalId: { type: "string", maxLength: 255 },
            ...pageQuery,
          },
        },
      },
    },
    async (request) => {
      const { expired, limit, ...filter } = request.query;
      return listLicenses(db, {
        ...filter,
        productIds: productIdsOf(request),
        expired: expired === undefined ? undefined : expired === "true",
        limit: Math.min(limit === undefined ? pageLimits.default : Number(limit), pageLimits.max),
      });
    },
  );

  app.post<{
    Body: SettingsBody & { productSlug: string; maxMachines: number; licenseKey?: string };
  }>(
    "/api/admin/licenses",
    {
      onRequest: write,
      preHandler: requireProductInKey<FastifyRequest<{ Body: { productSlug: string } }>>(
        db,
        (r) => ({ productSlug: r.body.productSlug }),
      ),
      schema: {
        body: {
          type: "object",
          required: ["productSlug", "maxMachines"],
          additionalProperties: false,
          properties: {
            productSlug: { type: "string", minLength: 1, maxLength: 255 },
            licenseKey: { type: "string", minLength: 1, maxLength: 255 },
            ...licenseSettingsProperties,
          },
        },
      },
    },
    async (request, reply) => {
      const { productSlug, licenseKey, maxMachines, ...settings } = request.body;
      const license = await createLicenseAudited(db, actorOf(request), {
        ...toSettings(settings),
        productSlug,
        maxMachines,
        licenseKey,
      });
      return reply.status(201).send(license);
    },
  );

  app.get<{ Params: { licenseKey: string } }>(
    "/api/admin/licenses/:licenseKey",
    { onRequest: read, preHandler: inKey, schema: { params: licenseKeyParam } },
    async (request) => showLicense(db, request.params.licenseKey),
  );

  app.patch<{ Params: { licenseKey: string }; Body: SettingsBody }>(
    "/api/admin/licenses/:licenseKey",
    {
      onRequest: write,
      preHandler: inKey,
      schema: {
        params: licenseKeyParam,
        body: {
          type: "object",
          minProperties: 1,
          additionalProperties: false,
          properties: licenseSettingsProperties,
        },
      },
    },
    async (request) => {
      return updateLicenseAudited(
        db,
        actorOf(request),
        request.params.licenseKey,
        toSettings(request.body),
      );
    },
  );

  const statusActions = { suspend: "SUSPENDED", revoke: "REVOKED", reinstate: "ACTIVE" } as const;
  for (const [action, status] of Object.entries(statusActions)) {
    app.post<{ Params: { licenseKey: string } }>(
      `/api/admin/licenses/:licenseKey/${action}`,
      { onRequest: write, preHandler: inKey, schema: { params: licenseKeyParam } },
      async (request) =>
        setLicenseStatusAudited(db, actorOf(request), request.params.licenseKey, status),
    );
  }

  app.get<{ Params: { licenseKey: string } }>(
    "/api/admin/licenses/:licenseKey/machines",
    { onRequest: read, preHandler: inKey, schema: { params: licenseKeyParam } },
    async (request) => {
      const { machines, pastActivations } = await showLicense(db, request.params.licenseKey);
      return { items: machines, past: pastActivations };
    },
  );

  app.delete<{ Params: { licenseKey: string; machineId: string } }>(
    "/api/admin/licenses/:licenseKey/machines/:machineId",
    {
      onRequest: write,
      preHandler: inKey,
      schema: {
        params: {
          type: "object",
          required: ["licenseKey", "machineId"],
          properties: {
            licenseKey: { type: "string", minLength: 1, maxLength: 255 },
            machineId: { type: "string", minLength: 1, maxLength: 255 },
          },
        },
      },
    },
    async (request) => {
      const { licenseKey, machineId } = request.params;
      await deactivateMachineAudited(db, actorOf(request), licenseKey, machineId);
      return { deactivated: true, licenseKey, machineId };
    },
  );
}
