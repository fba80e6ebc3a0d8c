import type { Kysely } from "kysely";
import { type DB, type LicenseStatus, licenseStatuses } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { newId, newLicenseKey } from "../../lib/ids.js";
import { isoOrNull, toIso } from "../../lib/time.js";
import { assertMaxLength, limits } from "../limits.js";
import { findProductBySlug } from "../products/products.js";
import { parseFeatures } from "./license-record.js";

export interface LicenseView {
  licenseKey: string;
  product: string;
  status: LicenseStatus;
  expiresAt: string | null;
  edition: string | null;
  editionName: string | null;
  features: string[];
  maxMachines: number;
  activeMachines: number;
  createdAt: string;
  updatedAt: string;
}

export interface MachineView {
  machineId: string;
  machineName: string | null;
  platform: string | null;
  activatedAt: string;
  lastSeenAt: string;
}

export interface LicenseSettings {
  status?: LicenseStatus;
  /** Epoch ms, or null for a license that never expires. */
  expiresAt?: number | null;
  edition?: string | null;
  editionName?: string | null;
  features?: string[];
  maxMachines?: number;
}

export interface CreateLicenseInput extends LicenseSettings {
  productSlug: string;
  maxMachines: number;
  licenseKey?: string;
}

/** The column is a 32-bit integer on both databases. */
const maxMachinesLimit = 2_147_483_647;

// Given keys must be printable and unambiguous to type: no spaces or control characters.
const licenseKeyPattern = /^[A-Za-z0-9][A-Za-z0-9._~-]*$/;

export async function createLicense(
  db: Kysely<DB>,
  input: CreateLicenseInput,
  now = Date.now(),
): Promise<LicenseView> {
  const product = await findProductBySlug(db, input.productSlug);
  if (!product) throw ShipkeyError.spec("PRODUCT_NOT_FOUND");
  const licenseKey = input.licenseKey ?? newLicenseKey();
  assertMaxLength("licenseKey", licenseKey, limits.identifier);
  if (!licenseKeyPattern.test(licenseKey)) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      "licenseKey may contain only letters, digits, '.', '_', '~' and '-'",
    );
  }
  assertSettings(input);
  const inserted = await db
    .insertInto("licenses")
    .values({
      id: newId("lic"),
      license_key: licenseKey,
      product_id: product.id,
      status: input.status ?? "ACTIVE",
      expires_at: input.expiresAt ?? null,
      edition: emptyToNull(input.edition) ?? null,
      edition_name: emptyToNull(input.editionName) ?? null,
      features: JSON.stringify(input.features ?? []),
      max_machines: input.maxMachines,
      active_machines: 0,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.column("license_key").doNothing())
    .returning("id")
    .executeTakeFirst();
  if (!inserted) throw new ShipkeyError("LICENSE_KEY_TAKEN", "A license with this key exists");
  return requireLicenseView(db, licenseKey);
}

/** Changes only the settings given; a change is visible to the very next request. */
export async function updateLicense(
  db: Kysely<DB>,
  licenseKey: string,
  changes: LicenseSettings,
  now = Date.now(),
): Promise<LicenseView> {
  assertSettings(changes);
  const features = changes.features === undefined ? undefined : JSON.stringify(changes.features);
  const result = await db
    .updateTable("licenses")
    .set({
      status: changes.status,
      expires_at: changes.expiresAt,
      edition: emptyToNull(changes.edition),
      edition_name: emptyToNull(changes.editionName),
      features,
      max_machines: changes.maxMachines,
      updated_at: now,
    })
    .where("license_key", "=", licenseKey)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw ShipkeyError.spec("LICENSE_NOT_FOUND");
  return requireLicenseView(db, licenseKey);
}

export async function showLicense(
  db: Kysely<DB>,
  licenseKey: string,
): Promise<LicenseView & { machines: MachineView[] }> {
  const license = await requireLicenseView(db, licenseKey);
  const machines = await db
    .selectFrom("activations")
    .innerJoin("licenses", "licenses.id", "activations.license_id")
    .select([
      "activations.machine_id",
      "activations.machine_name",
      "activations.platform",
      "activations.activated_at",
      "activations.last_seen_at",
    ])
    .where("licenses.license_key", "=", licenseKey)
    .where("activations.deactivated_at", "is", null)
    .orderBy("activations.activated_at")
    .execute();
  return {
    ...license,
    machines: machines.map((m) => ({
      machineId: m.machine_id,
      machineName: m.machine_name,
      platform: m.platform,
      activatedAt: toIso(m.activated_at),
      lastSeenAt: toIso(m.last_seen_at),
    })),
  };
}

async function requireLicenseView(db: Kysely<DB>, licenseKey: string): Promise<LicenseView> {
  const row = await db
    .selectFrom("licenses")
    .innerJoin("products", "products.id", "licenses.product_id")
    .selectAll("licenses")
    .select("products.slug as product_slug")
    .where("licenses.license_key", "=", licenseKey)
    .executeTakeFirst();
  if (!row) throw ShipkeyError.spec("LICENSE_NOT_FOUND");
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
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

/** An empty edition is no edition: stored and returned as null. undefined means "unchanged". */
function emptyToNull(value: string | null | undefined): string | null | undefined {
  return value === "" ? null : value;
}

function assertSettings(settings: LicenseSettings): void {
  if (settings.status !== undefined && !licenseStatuses.includes(settings.status)) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `status must be one of ${licenseStatuses.join(", ")}`,
    );
  }
  if (
    settings.maxMachines !== undefined &&
    (!Number.isSafeInteger(settings.maxMachines) ||
      settings.maxMachines < 0 ||
      settings.maxMachines > maxMachinesLimit)
  ) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `maxMachines must be an integer from 0 to ${maxMachinesLimit}`,
    );
  }
  assertMaxLength("edition", settings.edition, limits.edition);
  assertMaxLength("editionName", settings.editionName, limits.edition);
  if (settings.features !== undefined) {
    if (settings.features.length > limits.features) {
      throw new ShipkeyError("INVALID_FIELD_VALUE", `at most ${limits.features} features`);
    }
    for (const feature of settings.features) {
      assertMaxLength("feature", feature, limits.feature);
      if (feature === "")
        throw new ShipkeyError("INVALID_FIELD_VALUE", "features must not be empty");
    }
  }
}
