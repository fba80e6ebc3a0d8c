import type { Kysely } from "kysely";
import { deactivate } from "../../contracts/license-api.js";
import { limits } from "../../contracts/vocabulary.js";
import type { DB } from "../../db/schema.js";
import { deactivateMachine } from "../../actions/machines.js";
import { type App, documentationOnly, routeSchema } from "../contract-route.js";
import { assertPresent, requiredString, requireJsonObject } from "../request-fields.js";
import { normalizeLicenseKey } from "../../domain/licenses/license-key.js";

export function deactivateMachineRoute(app: App, db: Kysely<DB>): void {
  app.post(deactivate.url, {
    schema: routeSchema(deactivate),
    validatorCompiler: documentationOnly,
    bodyLimit: limits.licenseBodyBytes,
    config: { failureFlag: "success", jsonBody: true },
    handler: async (request) => {
      const body = requireJsonObject(request.body);
      assertPresent(body, ["licenseKey", "machineId"]);
      // A productSlug, if sent, is ignored: freeing a slot needs only the key and the machine.
      const { machineId, productSlug } = await deactivateMachine(
        db,
        {
          licenseKey: normalizeLicenseKey(requiredString(body, "licenseKey")),
          machineId: requiredString(body, "machineId"),
        },
        { by: "client" },
      );
      // The daily counters count it under the license's product.
      request.countedProduct = productSlug;
      return { success: true, message: "Machine deactivated", machineId } as const;
    },
  });
}
