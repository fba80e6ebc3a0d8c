import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import { type LicenseHistoryEntry, licenseHistory } from "../../../domain/audit/license-history.js";
import { requireLicenseView } from "../../../domain/licenses/license-views.js";
import type { Page } from "../../../domain/pagination.js";
import { ShipkeyError } from "../../../errors.js";
import { type Form, text } from "../form-body.js";
import { contextOf, sendPage } from "../page-kit.js";
import { historyView } from "../views/license-history.js";

/** Entries a history page shows, as the audit page. */
const historyPageSize = 100;

/** The license page's History tab: the license's story, newest first. */
export function licenseHistoryPages(app: FastifyInstance, db: Kysely<DB>): void {
  app.get<{ Params: { key: string }; Querystring: Form }>(
    "/admin/licenses/:key/history",
    async (request, reply) => {
      const license = await requireLicenseView(db, request.params.key);
      const cursor = text(request.query, "cursor");
      let page: Page<LicenseHistoryEntry> = { items: [], nextCursor: null };
      let error = "";
      try {
        page = await licenseHistory(db, license.licenseKey, {
          limit: historyPageSize,
          cursor: cursor || undefined,
        });
      } catch (err) {
        if (!(err instanceof ShipkeyError)) throw err;
        error = err.message;
      }
      return sendPage(
        reply,
        historyView({ context: contextOf(request), license, cursor, page, error }),
      );
    },
  );
}
