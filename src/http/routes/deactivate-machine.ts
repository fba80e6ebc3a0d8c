import type { Kysely } from "kysely";
import { deactivate } from "../../contracts/license-api.js";
import { limits } from "../../contracts/vocabulary.js";
import type { DB } from "../../db/schema.js";
import { deactivateMachine } from "../../actions/machines.js";
import { type App, publicRoute } from "../contract-route.js";
import { normalizeLicenseKey } from "../../domain/licenses/license-key.js";

export function deactivateMachineRoute(app: App, db: Kysely<DB>): void {
  app.post(deactivate.url, {
    ...publicRoute(deactivate),
    bodyLimit: limits.licenseBodyBytes,
    handler: async (request) => {
      // A productSlug, if sent, is ignored: freeing a slot needs only the key and the machine.
      const { machineId, productSlug } = await deactivateMachine(
        db,
        {
          licenseKey: normalizeLicenseKey(request.body.licenseKey),
          machineId: request.body.machineId,
        },
        { by: "client" },
      );
      // The daily counters count it under the license's product.
      request.countedProduct = productSlug;
      return { success: true, message: "Machine deactivated", machineId } as const;
    },
  });
}
