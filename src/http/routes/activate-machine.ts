import type { Kysely } from "kysely";
import { activate } from "../../contracts/license-api.js";
import { limits } from "../../contracts/vocabulary.js";
import type { DB } from "../../db/schema.js";
import { normalizeLicenseKey } from "../../domain/licenses/license-key.js";
import { activateMachine } from "../../actions/machines.js";
import { reportedVersion } from "../../domain/releases/version.js";
import { type App, publicRoute } from "../contract-route.js";

export function activateMachineRoute(app: App, db: Kysely<DB>): void {
  app.post(activate.url, {
    ...publicRoute(activate),
    bodyLimit: limits.licenseBodyBytes,
    handler: async (request) => {
      const body = request.body;
      const result = await activateMachine(db, {
        licenseKey: normalizeLicenseKey(body.licenseKey),
        machineId: body.machineId,
        productSlug: body.productSlug,
        machineName: body.machineName ?? null,
        platform: body.platform ?? null,
        appVersion: reportedVersion(body.appVersion),
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
