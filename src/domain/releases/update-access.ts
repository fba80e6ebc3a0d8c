import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { isExpired, requireLicenseWithActivation } from "../licenses/license-record.js";
import type { Product } from "../products/products.js";

/** What a client sent to prove it may update: a license key and the machine it runs on. */
export interface UpdateCredentials {
  licenseKey: string;
  machineId: string;
}

/**
 * Which releases a client may receive: all of them (`null`), or, on an expired license, those
 * published up to its expiry (the perpetual fallback of an annual update plan).
 */
export type PublishedUpTo = number | null;

/**
 * Lets a client through to a product's feeds and downloads. A product that does not require a
 * license lets everyone through. One that does wants a machine activated on an ACTIVE license of
 * that product; an expired one still gets what was published before it expired. Refusals: 401
 * UPDATES_LICENSE_REQUIRED without credentials, 403 UPDATES_LICENSE_NOT_FOUND for an unknown
 * key (it spends the caller's unknown-key budget), 403 UPDATES_LICENSE_REFUSED otherwise.
 */
export async function checkUpdateAccess(
  db: Kysely<DB>,
  product: Product,
  credentials: UpdateCredentials | null,
  now: number,
): Promise<PublishedUpTo> {
  if (!product.updatesRequireLicense) return null;
  if (credentials === null) {
    throw new ShipkeyError(
      "UPDATES_LICENSE_REQUIRED",
      "Updates of this product need a license: send Authorization: License <key> and Shipkey-Machine: <machine id>",
    );
  }
  const found = await requireLicenseWithActivation(db, credentials).catch((err: unknown) => {
    if (err instanceof ShipkeyError && err.code === "LICENSE_NOT_FOUND") {
      throw new ShipkeyError("UPDATES_LICENSE_NOT_FOUND", "Invalid license key");
    }
    throw err;
  });
  const { license, machineActive } = found;
  const refuse = (reason: string) => new ShipkeyError("UPDATES_LICENSE_REFUSED", reason);
  if (license.productSlug !== product.slug) throw refuse("The license is for another product");
  if (license.status !== "ACTIVE") {
    throw refuse(`The license is ${license.status.toLowerCase()}`);
  }
  if (!machineActive) throw refuse("The machine is not activated on this license");
  return isExpired(license.expiresAt, now) ? license.expiresAt : null;
}

/** A version may go to a client when it was published within what the client may receive. */
export function mayReceive(publishedAt: number, upTo: PublishedUpTo): boolean {
  return upTo === null || publishedAt <= upTo;
}
