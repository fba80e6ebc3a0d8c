import * as apiKeys from "../../src/contracts/api-keys.js";
import * as audit from "../../src/contracts/audit.js";
import * as emails from "../../src/contracts/emails.js";
import type { Contract } from "../../src/contracts/kit.js";
import * as checkoutClaim from "../../src/contracts/checkout-claim.js";
import * as integrations from "../../src/contracts/integrations.js";
import * as licenseApi from "../../src/contracts/license-api.js";
import * as licenses from "../../src/contracts/licenses.js";
import * as machines from "../../src/contracts/machines.js";
import * as plans from "../../src/contracts/plans.js";
import * as products from "../../src/contracts/products.js";
import * as releaseVersions from "../../src/contracts/release-versions.js";
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
  apiKeys,
  audit,
  emails,
  checkoutClaim,
  integrations,
  licenseApi,
  licenses,
  machines,
  plans,
  products,
  releaseVersions,
  releases,
  seats,
  webhooks,
]
  .flatMap((module) => Object.values(module))
  .filter(isContract);
