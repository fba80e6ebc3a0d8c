import type { Kysely } from "kysely";
import { activate } from "../../contracts/license-api.js";
import { limits } from "../../contracts/vocabulary.js";
import type { DB } from "../../db/schema.js";
import { normalizeLicenseKey } from "../../domain/licenses/license-key.js";
import { activateMachine } from "../../actions/machines.js";
import { type App, documentationOnly, routeSchema } from "../contract-route.js";
import {
  assertPresent,
  optionalString,
  reportedAppVersion,
  requiredString,
  requireJsonObject,
} from "../request-fields.js";

export function activateMachineRoute(app: App, db: Kysely<DB>): void {
  app.post(activate.url, {
    schema: routeSchema(activate),
    validatorCompiler: documentationOnly,
    bodyLimit: limits.licenseBodyBytes,
    config: { failureFlag: "success", jsonBody: true },
    handler: async (request) => {
      const body = requireJsonObject(request.body);
      assertPresent(body, ["licenseKey", "machineId", "productSlug"]);
      const result = await activateMachine(db, {
        licenseKey: normalizeLicenseKey(requiredString(body, "licenseKey")),
        machineId: requiredString(body, "machineId"),
        productSlug: requiredString(body, "productSlug"),
        machineName: optionalString(body, "machineName"),
        platform: optionalString(body, "platform"),
        appVersion: reportedAppVersion(body),
      });
      if (result.outcome === "already-activated") {
        return {
          success: true,
          message: "Machine already activated",
          activation: result.activation,
        } as const;
      }
      return {
        success: true,
        message: "Machine activated",
        activation: result.activation,
        activeMachines: result.activeMachines,
        maxMachines: result.maxMachines,
      } as const;
    },
  });
}
