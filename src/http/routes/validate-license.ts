import type { Kysely } from "kysely";
import { validate } from "../../contracts/license-api.js";
import { limits } from "../../contracts/vocabulary.js";
import type { DB } from "../../db/schema.js";
import { type LastSeenRecorder, validateLicense } from "../../domain/licenses/validate-license.js";
import { type App, documentationOnly, routeSchema } from "../contract-route.js";
import {
  assertPresent,
  reportedAppVersion,
  requiredString,
  requireJsonObject,
} from "../request-fields.js";
import { normalizeLicenseKey } from "../../domain/licenses/license-key.js";

export function validateLicenseRoute(app: App, db: Kysely<DB>, lastSeen: LastSeenRecorder): void {
  app.post(validate.url, {
    schema: routeSchema(validate),
    validatorCompiler: documentationOnly,
    bodyLimit: limits.licenseBodyBytes,
    config: { failureFlag: validate.failureFlag, jsonBody: true },
    handler: async (request) => {
      const body = requireJsonObject(request.body);
      assertPresent(body, ["licenseKey", "machineId", "productSlug"]);
      const input = {
        licenseKey: normalizeLicenseKey(requiredString(body, "licenseKey")),
        machineId: requiredString(body, "machineId"),
        productSlug: requiredString(body, "productSlug"),
        appVersion: reportedAppVersion(body),
      };
      const result = await validateLicense(db, input, lastSeen);
      return { valid: true, ...result } as const;
    },
  });
}
