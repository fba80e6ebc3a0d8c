import type { Kysely } from "kysely";
import { validate } from "../../contracts/license-api.js";
import { limits } from "../../contracts/vocabulary.js";
import type { DB } from "../../db/schema.js";
import { type LastSeenRecorder, validateLicense } from "../../domain/licenses/validate-license.js";
import { reportedVersion } from "../../domain/releases/version.js";
import { type App, publicRoute } from "../contract-route.js";
import { normalizeLicenseKey } from "../../domain/licenses/license-key.js";

export function validateLicenseRoute(app: App, db: Kysely<DB>, lastSeen: LastSeenRecorder): void {
  app.post(validate.url, {
    ...publicRoute(validate),
    bodyLimit: limits.licenseBodyBytes,
    handler: async (request) => {
      const body = request.body;
      const input = {
        licenseKey: normalizeLicenseKey(body.licenseKey),
        machineId: body.machineId,
        productSlug: body.productSlug,
        appVersion: reportedVersion(body.appVersion),
      };
      const result = await validateLicense(db, input, lastSeen);
      return { valid: true, ...result } as const;
    },
  });
}
