import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { normalizeLicenseKey } from "../../domain/licenses/license-key.js";
import { checkoutLicense } from "../../actions/machines.js";
import type { SigningKeyLookup } from "../../domain/licenses/checkout-license.js";
import type { LastSeenRecorder } from "../../domain/licenses/validate-license.js";
import { reportedVersion } from "../../domain/releases/version.js";
import { checkout } from "../../contracts/license-api.js";
import { type App, publicRoute } from "../contract-route.js";
import { limits } from "../../contracts/vocabulary.js";

export function checkoutLicenseRoute(
  app: App,
  db: Kysely<DB>,
  lastSeen: LastSeenRecorder,
  signingKeyOf: SigningKeyLookup,
): void {
  app.post(checkout.url, {
    ...publicRoute(checkout),
    bodyLimit: limits.licenseBodyBytes,
    handler: async (request) => {
      const body = request.body;
      const input = {
        licenseKey: normalizeLicenseKey(body.licenseKey),
        machineId: body.machineId,
        productSlug: body.productSlug,
        ttlSeconds: body.ttlSeconds ?? null,
        appVersion: reportedVersion(body.appVersion),
      };
      const result = await checkoutLicense(db, input, lastSeen, signingKeyOf);
      return { success: true, ...result } as const;
    },
  });
}
