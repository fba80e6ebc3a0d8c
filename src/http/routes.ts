import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import type { LastSeenRecorder } from "../domain/licenses/validate-license.js";
import { activateMachineRoute } from "./routes/activate-machine.js";
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
}
