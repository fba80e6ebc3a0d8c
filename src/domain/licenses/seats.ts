import type { Transaction } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { requireProduct } from "../products/products.js";
import { licenseIdOfKey, lockLicense } from "./license-record.js";
import { type LicenseView, requireLicenseView } from "./license-views.js";
import { externalIdUnique } from "./manage-licenses.js";

/**
 * Deactivates every machine of the license at once (by an admin: the churn limit neither holds
 * nor counts it); `machineIds` are the machines it ended, sorted. Certificates are left alone: an
 * unexpired one keeps counting against the offline limit until its exp, so a reset frees slots
 * but never lets more machines run offline than the limit allows.
 */
export async function resetMachines(
  trx: Transaction<DB>,
  licenseKey: string,
  now = Date.now(),
): Promise<{ licenseKey: string; machineIds: string[]; certificatesHeld: number }> {
  await requireLicenseView(trx, licenseKey);
  const id = await licenseIdOfKey(trx, licenseKey);
  // The license row first: an activation racing the reset waits for it, then counts afresh.
  await lockLicense(trx, { licenseId: id });
  const ended = await trx
    .updateTable("activations")
    .set({ deactivated_at: now, deactivated_by: "admin" })
    .where("license_id", "=", id)
    .where("deactivated_at", "is", null)
    .returning("machine_id")
    .execute();
  const machineIds = ended.map((row) => row.machine_id).sort();
  await trx
    .updateTable("licenses")
    .set((eb) => ({ active_machines: eb("active_machines", "-", machineIds.length) }))
    .where("id", "=", id)
    .execute();
  const held = await trx
    .selectFrom("license_certificates")
    .select((eb) => eb.fn.countAll<number | string | bigint>().as("n"))
    .where("license_id", "=", id)
    .where("expires_at", ">", now)
    .executeTakeFirst();
  return { licenseKey, machineIds, certificatesHeld: Number(held?.n ?? 0) };
}

/**
 * Moves the license to another product (404 PRODUCT_NOT_FOUND; 409 EXTERNAL_ID_TAKEN when the
 * new product has a license with its external id). Its machines stay activated; from now on they
 * validate as machines of the new product.
 */
export async function moveLicense(
  trx: Transaction<DB>,
  licenseKey: string,
  productSlug: string,
  now = Date.now(),
): Promise<{ before: string; license: LicenseView }> {
  const license = await requireLicenseView(trx, licenseKey);
  const id = await licenseIdOfKey(trx, licenseKey);
  const product = await requireProduct(trx, productSlug);
  await externalIdUnique(
    trx
      .updateTable("licenses")
      .set({ product_id: product.id, updated_at: now })
      .where("id", "=", id)
      .execute(),
  );
  return { before: license.product, license: await requireLicenseView(trx, licenseKey) };
}

/**
 * Deletes the license with its ended activations and certificate records; refused with 409
 * LICENSE_IN_USE while a machine holds a slot (reset its machines first).
 */
export async function deleteLicense(
  trx: Transaction<DB>,
  licenseKey: string,
): Promise<LicenseView> {
  const license = await requireLicenseView(trx, licenseKey);
  const id = await licenseIdOfKey(trx, licenseKey);
  await lockLicense(trx, { licenseId: id });
  const active = await trx
    .selectFrom("activations")
    .select("id")
    .where("license_id", "=", id)
    .where("deactivated_at", "is", null)
    .limit(1)
    .executeTakeFirst();
  if (active) {
    throw new ShipkeyError(
      "LICENSE_IN_USE",
      "The license still has active machines; reset its machines first",
    );
  }
  await trx.deleteFrom("activations").where("license_id", "=", id).execute();
  await trx.deleteFrom("license_certificates").where("license_id", "=", id).execute();
  await trx.deleteFrom("licenses").where("id", "=", id).execute();
  return license;
}
