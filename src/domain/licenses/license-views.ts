import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { isoOrNull, toIso } from "../../lib/time.js";
import { parseFeatures } from "./license-record.js";
import { licenseSettings, type LicenseSettingName } from "../../contracts/license-settings.js";
import { License } from "../../contracts/licenses.js";
import type { Machine } from "../../contracts/machines.js";

// A license as the admin API, the dashboard and the CLI show it, and what changed between two
// views of one.

export type LicenseView = License;
export type MachineView = Machine;

export function selectLicenseViews(db: Kysely<DB>) {
  return db
    .selectFrom("licenses")
    .innerJoin("products", "products.id", "licenses.product_id")
    .selectAll("licenses")
    .select("products.slug as product_slug");
}

export async function requireLicenseView(db: Kysely<DB>, licenseKey: string): Promise<LicenseView> {
  const license = await findLicenseView(db, licenseKey);
  if (!license) throw ShipkeyError.spec("LICENSE_NOT_FOUND");
  return license;
}

export async function findLicenseView(
  db: Kysely<DB>,
  licenseKey: string,
): Promise<LicenseView | null> {
  const row = await selectLicenseViews(db)
    .where("licenses.license_key", "=", licenseKey)
    .executeTakeFirst();
  return row ? toLicenseView(row) : null;
}

/** The answer's fields that are settings, in the answer's order: the audit's and events' order. */
const settingNames = Object.keys(License.properties).filter((name): name is LicenseSettingName =>
  Object.hasOwn(licenseSettings, name),
);

/** The settings whose value differs between two views of one license, in a fixed order. */
export function changedSettings(before: LicenseView, after: LicenseView): LicenseSettingName[] {
  return settingNames.filter(
    (name) => JSON.stringify(before[name]) !== JSON.stringify(after[name]),
  );
}

/** A setting's value before and after a change, as the audit log records it. */
export interface SettingChange {
  from: unknown;
  to: unknown;
}

/**
 * The old and new value of each setting that differs between two views of one license, in the
 * fixed order of changedSettings. No setting is a secret (the license key is none of them).
 */
export function settingChanges(
  before: LicenseView,
  after: LicenseView,
): Record<string, SettingChange> {
  return Object.fromEntries(
    changedSettings(before, after).map((name) => [name, { from: before[name], to: after[name] }]),
  );
}

export function toLicenseView(row: DB["licenses"] & { product_slug: string }): LicenseView {
  return {
    licenseKey: row.license_key,
    product: row.product_slug,
    status: row.status,
    expiresAt: isoOrNull(row.expires_at),
    edition: row.edition,
    editionName: row.edition_name,
    features: parseFeatures(row.features),
    maxMachines: row.max_machines,
    activeMachines: row.active_machines,
    customerName: row.customer_name,
    customerEmail: row.customer_email,
    note: row.note,
    externalId: row.external_id,
    maxDeactivationsPer30Days: row.max_deactivations_per_30_days,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}
