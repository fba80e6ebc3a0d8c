import * as admin from "../../src/contracts/admin.js";
import type { Contract } from "../../src/contracts/kit.js";
import * as checkoutClaim from "../../src/contracts/checkout-claim.js";
import * as integrations from "../../src/contracts/integrations.js";
import * as licenseApi from "../../src/contracts/license-api.js";
import * as releases from "../../src/contracts/releases.js";
import * as seats from "../../src/contracts/seats.js";
import * as webhooks from "../../src/contracts/webhooks.js";

const isContract = (value: unknown): value is Contract =>
  typeof value === "object" &&
  value !== null &&
  "operationId" in value &&
  "schema" in value &&
  "url" in value;

/** Every endpoint's contract, from every contract module. */
export const contracts: Contract[] = [
  admin,
  checkoutClaim,
  integrations,
  licenseApi,
  releases,
  seats,
  webhooks,
]
  .flatMap((module) => Object.values(module))
  .filter(isContract);
