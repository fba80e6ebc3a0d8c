import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { type LastSeenRecorder, validateLicense } from "../../domain/licenses/validate-license.js";
import { limits } from "../../domain/limits.js";
import { validateSchema, documentationOnly } from "./public-schemas.js";
import { assertPresent, requiredString, requireJsonObject } from "../request-fields.js";

export function validateLicenseRoute(
  app: FastifyInstance,
  db: Kysely<DB>,
  lastSeen: LastSeenRecorder,
): void {
  app.post("/api/license/validate", {
    schema: validateSchema,
    validatorCompiler: documentationOnly,
    bodyLimit: limits.licenseBodyBytes,
    config: { failureFlag: "valid", jsonBody: true },
    handler: async (request) => {
      const body = requireJsonObject(request.body);
      assertPresent(body, ["licenseKey", "machineId", "productSlug"]);
      const input = {
        licenseKey: requiredString(body, "licenseKey"),
        machineId: requiredString(body, "machineId"),
        productSlug: requiredString(body, "productSlug"),
      };
      const result = await validateLicense(db, input, lastSeen);
      return { valid: true, ...result };
    },
  });
}
