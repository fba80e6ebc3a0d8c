import type { Kysely } from "kysely";
import * as contracts from "../../../contracts/api-keys.js";
import type { DB } from "../../../db/schema.js";
import { listApiKeys } from "../../../domain/api-keys/api-keys.js";
import * as actions from "../../../actions/api-keys.js";
import { ShipkeyError } from "../../../errors.js";
import { parseIsoTimestamp } from "../../../lib/time.js";
import { productIdsOf, requireActor } from "../../admin-auth.js";
import { adminRoute, type App } from "../../contract-route.js";

export function adminApiKeyRoutes(app: App, db: Kysely<DB>): void {
  // A key limited to products lists only keys limited to some of its products.
  app.get(contracts.listApiKeys.url, adminRoute(db, contracts.listApiKeys), async (request) => ({
    items: await listApiKeys(db, productIdsOf(request)),
  }));

  app.post(
    contracts.createApiKey.url,
    { ...adminRoute(db, contracts.createApiKey), config: { secretAnswer: true } },
    async (request, reply) => {
      const { name, scopes, expiresAt, products } = request.body;
      let expiresAtMs: number | null = null;
      if (expiresAt !== undefined && expiresAt !== null) {
        expiresAtMs = parseIsoTimestamp(expiresAt);
        if (expiresAtMs === null) {
          throw new ShipkeyError(
            "INVALID_FIELD_VALUE",
            "expiresAt must be an ISO 8601 timestamp with a zone, or null",
            { field: "expiresAt" },
          );
        }
      }
      // The secret goes to the caller once and never into the audit log.
      const created = await actions.createApiKey(
        db,
        requireActor(request),
        {
          name,
          scopes,
          expiresAt: expiresAtMs,
          products,
        },
        request.idempotencyClaim,
      );
      return reply.status(201).send(created);
    },
  );

  // {"withCreated": true}: the keys below it too (keysBelow), in the same transaction.
  app.post(contracts.revokeApiKey.url, adminRoute(db, contracts.revokeApiKey), async (request) => {
    return actions.revokeApiKey(
      db,
      requireActor(request),
      request.params.id,
      {
        withCreated: request.body?.withCreated === true,
      },
      request.idempotencyClaim,
    );
  });
}
