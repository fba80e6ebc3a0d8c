import { describe, expect, it } from "vitest";
import * as licenseApi from "../../src/contracts/license-api.js";
import { errorCodesOf, routeSchema } from "../../src/http/contract-route.js";
import { contracts } from "../helpers/contracts.js";

/**
 * The codes a contract documents come from the contract itself: `signedAnswers` (the license
 * endpoints: INVALID_NONCE) and `admin` (the admin API: CSRF and idempotency), never from its URL;
 * the failure flag is declared once, as `failureFlag`, and both the failure schema and the route
 * follow it.
 */
describe("a contract's documented error codes", () => {
  it("signedAnswers is exactly the license endpoints, admin exactly the admin API", () => {
    for (const c of contracts) {
      expect(c.signedAnswers === true, c.operationId).toBe(c.url.startsWith("/api/license/"));
      expect(c.admin === true, c.operationId).toBe(c.url.startsWith("/api/admin/"));
    }
  });

  it("INVALID_NONCE on the license endpoints; CSRF and idempotency on the admin API's writes", () => {
    for (const c of contracts) {
      const codes = errorCodesOf(c);
      expect(codes.includes("INVALID_NONCE"), c.operationId).toBe(c.signedAnswers === true);
      expect(codes.includes("CSRF_TOKEN_INVALID"), c.operationId).toBe(c.admin === true);
      expect(codes.includes("IDEMPOTENCY_KEY_REUSED"), c.operationId).toBe(
        c.admin === true && c.method !== "GET",
      );
    }
  });

  it("the failure flag names the failure schema's flag: success, or valid on validate", () => {
    const flags = Object.fromEntries(
      [licenseApi.activate, licenseApi.validate, licenseApi.deactivate, licenseApi.checkout].map(
        (c) => [c.operationId, c.failureFlag],
      ),
    );
    expect(flags).toEqual({
      activateMachine: "success",
      validateLicense: "valid",
      deactivateMachine: "success",
      checkoutLicense: "success",
    });
    for (const c of contracts) {
      const responses = routeSchema(c).response as Record<string, { properties?: object }>;
      const failure = responses["4xx"]?.properties ?? {};
      const flag = ["success", "valid"].find((name) => name in failure);
      expect(flag, c.operationId).toBe(c.failureFlag);
    }
  });
});
