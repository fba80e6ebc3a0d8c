import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import type { LastSeenRecorder } from "../domain/licenses/validate-license.js";
import { registerActor } from "./admin-auth.js";
import { rejectNulInput } from "./request-fields.js";
import { activateMachineRoute } from "./routes/activate-machine.js";
import { adminApiKeyRoutes } from "./routes/admin/api-keys.js";
import { adminAuditRoutes } from "./routes/admin/audit.js";
import { adminLicenseRoutes } from "./routes/admin/licenses.js";
import { adminProductRoutes } from "./routes/admin/products.js";
import { adminReleaseRoutes } from "./routes/admin/releases.js";
import { deactivateMachineRoute } from "./routes/deactivate-machine.js";
import { healthRoutes } from "./routes/health.js";
import { publishReleaseRoute } from "./routes/publish-release.js";
import { validateLicenseRoute } from "./routes/validate-license.js";

/** The whole HTTP surface, in one place. */
export function registerRoutes(
  app: FastifyInstance,
  db: Kysely<DB>,
  lastSeen: LastSeenRecorder,
): void {
  healthRoutes(app, db);
  publishReleaseRoute(app, db);
  activateMachineRoute(app, db);
  validateLicenseRoute(app, db, lastSeen);
  deactivateMachineRoute(app, db);

  registerActor(app);
  app.addHook("preValidation", async (request) => {
    if (request.routeOptions.url?.startsWith("/api/admin/")) rejectNulInput(request);
  });
  adminProductRoutes(app, db);
  adminLicenseRoutes(app, db);
  adminReleaseRoutes(app, db);
  adminApiKeyRoutes(app, db);
  adminAuditRoutes(app, db);
}
