import type { FastifyInstance } from "fastify";
import { type Kysely, sql } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";

export function healthRoutes(app: FastifyInstance, db: Kysely<DB>): void {
  // Liveness: the process answers. No database access, so a slow database does not get the
  // process restarted by an orchestrator.
  app.get("/healthz", async () => ({ status: "ok" }));

  // Readiness: the database answers a trivial query.
  app.get("/readyz", async (request) => {
    try {
      await sql`select 1`.execute(db);
    } catch (err) {
      request.log.warn({ err }, "readiness check failed");
      throw new ShipkeyError("SERVICE_UNAVAILABLE", "Database unreachable");
    }
    return { status: "ready" };
  });
}
