import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { checkoutLicense, type SigningKeyLookup } from "../../domain/licenses/checkout-license.js";
import type { LastSeenRecorder } from "../../domain/licenses/validate-license.js";
import { limits } from "../../domain/limits.js";
import { ShipkeyError } from "../../errors.js";
import { checkoutSchema, documentationOnly } from "./public-schemas.js";
import {
  assertPresent,
  isMissing,
  type JsonObject,
  requiredString,
  requireJsonObject,
  wrongType,
} from "../request-fields.js";

export function checkoutLicenseRoute(
  app: FastifyInstance,
  db: Kysely<DB>,
  lastSeen: LastSeenRecorder,
  signingKeyOf: SigningKeyLookup,
): void {
  app.post("/api/license/checkout", {
    schema: checkoutSchema,
    validatorCompiler: documentationOnly,
    bodyLimit: limits.licenseBodyBytes,
    config: { failureFlag: "success", jsonBody: true },
    handler: async (request) => {
      const body = requireJsonObject(request.body);
      assertPresent(body, ["licenseKey", "machineId", "productSlug"]);
      const input = {
        licenseKey: requiredString(body, "licenseKey"),
        machineId: requiredString(body, "machineId"),
        productSlug: requiredString(body, "productSlug"),
        ttlSeconds: optionalTtl(body),
      };
      const result = await checkoutLicense(db, input, lastSeen, signingKeyOf);
      return { success: true, ...result };
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
