import cookie from "@fastify/cookie";
import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import type { LastSeenRecorder } from "../domain/licenses/validate-license.js";
import { registerActor } from "./admin-auth.js";
import type { DatabaseFaults } from "./database-faults.js";
import { registerIdempotency } from "./idempotency.js";
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
  faults: DatabaseFaults,
): void {
  healthRoutes(app, db, faults);
  publishReleaseRoute(app, db);
  activateMachineRoute(app, db);
  validateLicenseRoute(app, db, lastSeen);
  deactivateMachineRoute(app, db);

  // The admin API in a scope of its own, so its hooks do not run on the license endpoints.
  void app.register(async (admin) => {
    await admin.register(cookie); // the dashboard session (admin-auth.ts)
    registerActor(admin);
    admin.addHook("preValidation", async (request) => rejectNulInput(request));
    registerIdempotency(admin, db, faults);
    adminProductRoutes(admin, db);
    adminLicenseRoutes(admin, db);
    adminReleaseRoutes(admin, db);
    adminApiKeyRoutes(admin, db);
    adminAuditRoutes(admin, db);
  });
}
