import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import type { DatabaseFaults } from "../database-faults.js";
import { liveness, readiness } from "../../contracts/license-api.js";
import { type App, routeSchema } from "../contract-route.js";

/** A database that failed to serve this recently is not ready, whatever the probe says. */
const recentFaultMs = 5000;

export function healthRoutes(app: App, db: Kysely<DB>, faults: DatabaseFaults): void {
  // Liveness: the process answers. No database access, so a slow database does not get the
  // process restarted by an orchestrator.
  app.get(liveness.url, { schema: routeSchema(liveness) }, async () => ({ status: "ok" }) as const);

  // Readiness: the database takes a write (one row, rewritten), and no request found it
  // unavailable in the last seconds (a full disk can refuse new rows yet take this one).
  app.get(readiness.url, { schema: routeSchema(readiness) }, async () => {
    if (!faults.failedWithin(recentFaultMs)) {
      try {
        const now = Date.now();
        await db
          .insertInto("readiness_probe")
          .values({ id: 1, checked_at: now })
          .onConflict((oc) => oc.column("id").doUpdateSet({ checked_at: now }))
          .execute();
        return { status: "ready" } as const;
      } catch (err) {
        faults.report(err, "readiness probe");
      }
    }
    throw new ShipkeyError("DATABASE_UNAVAILABLE", "Service unavailable");
  });
}
