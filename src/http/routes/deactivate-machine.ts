import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { deactivateMachine } from "../../domain/licenses/deactivate-machine.js";
import { limits } from "../../domain/limits.js";
import { deactivateSchema, documentationOnly } from "./public-schemas.js";
import { assertPresent, requiredString, requireJsonObject } from "../request-fields.js";

export function deactivateMachineRoute(app: FastifyInstance, db: Kysely<DB>): void {
  app.post("/api/license/deactivate", {
    schema: deactivateSchema,
    validatorCompiler: documentationOnly,
    bodyLimit: limits.licenseBodyBytes,
    config: { failureFlag: "success", jsonBody: true },
    handler: async (request) => {
      const body = requireJsonObject(request.body);
      assertPresent(body, ["licenseKey", "machineId"]);
      // A productSlug, if sent, is ignored: freeing a slot needs only the key and the machine.
      const { machineId } = await deactivateMachine(
        db,
        {
          licenseKey: requiredString(body, "licenseKey"),
          machineId: requiredString(body, "machineId"),
        },
        { by: "client" },
      );
      return { success: true, message: "Machine deactivated", machineId };
    },
  });
}
