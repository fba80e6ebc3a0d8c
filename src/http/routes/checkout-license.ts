import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { normalizeLicenseKey } from "../../domain/licenses/license-key.js";
import { checkoutLicense } from "../../actions/machines.js";
import type { SigningKeyLookup } from "../../domain/licenses/checkout-license.js";
import type { LastSeenRecorder } from "../../domain/licenses/validate-license.js";
import { ShipkeyError } from "../../errors.js";
import { checkout } from "../../contracts/license-api.js";
import { type App, documentationOnly, routeSchema } from "../contract-route.js";
import {
  assertPresent,
  isMissing,
  type JsonObject,
  reportedAppVersion,
  requiredString,
  requireJsonObject,
  wrongType,
} from "../request-fields.js";
import { limits } from "../../contracts/vocabulary.js";

export function checkoutLicenseRoute(
  app: App,
  db: Kysely<DB>,
  lastSeen: LastSeenRecorder,
  signingKeyOf: SigningKeyLookup,
): void {
  app.post(checkout.url, {
    schema: routeSchema(checkout),
    validatorCompiler: documentationOnly,
    bodyLimit: limits.licenseBodyBytes,
    config: { failureFlag: "success", jsonBody: true },
    handler: async (request) => {
      const body = requireJsonObject(request.body);
      assertPresent(body, ["licenseKey", "machineId", "productSlug"]);
      const input = {
        licenseKey: normalizeLicenseKey(requiredString(body, "licenseKey")),
        machineId: requiredString(body, "machineId"),
        productSlug: requiredString(body, "productSlug"),
        ttlSeconds: optionalTtl(body),
        appVersion: reportedAppVersion(body),
      };
      const result = await checkoutLicense(db, input, lastSeen, signingKeyOf);
      return { success: true, ...result } as const;
    },
  });
}

/** ttlSeconds: absent, or a positive whole number of seconds. */
function optionalTtl(body: JsonObject): number | null {
  const value = body.ttlSeconds;
  if (isMissing(value)) return null;
  if (typeof value !== "number") throw wrongType("ttlSeconds", "a number");
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      "ttlSeconds must be a whole number of seconds, at least 1",
      { field: "ttlSeconds" },
    );
  }
  return value;
}
