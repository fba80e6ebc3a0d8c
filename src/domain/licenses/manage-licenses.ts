import type { Insertable, Kysely } from "kysely";
import type { DB, LicensesTable } from "../../db/schema.js";
import { isUniqueViolation } from "../../db/faults.js";
import { errorsOf, ShipkeyError, throwFirst } from "../../errors.js";
import { newId, newLicenseKey } from "../../lib/ids.js";
import { assertMaxLength } from "../limits.js";
import { findProductBySlug } from "../products/products.js";
import { settingErrors } from "../settings.js";
import { normalizeLicenseKey } from "./license-key.js";
import { type LicenseView, requireLicenseView } from "./license-views.js";
import { licenseSettings, type LicenseSettingsTable } from "../../contracts/license-settings.js";
import type { RequiredOnCreate, SettingValues } from "../../contracts/settings.js";
import { limits } from "../../contracts/vocabulary.js";

// A license's settings as admins write them: create, update, and their refusals. (Reading a
// license: license-views.ts, show-license.ts; lists: list-licenses.ts.)

/** A license's settings as create and update take them (expiresAt in epoch ms; null: never). */
export type LicenseSettings = SettingValues<LicenseSettingsTable>;

/** A new license: its product, its settings (those required on create given) and maybe its key. */
export type CreateLicenseInput = LicenseSettings &
  Required<Pick<LicenseSettings, RequiredOnCreate<LicenseSettingsTable>>> & {
    productSlug: string;
    licenseKey?: string;
  };

// Given keys must be printable and unambiguous to type: no spaces or control characters.
const licenseKeyPattern = /^[A-Za-z0-9][A-Za-z0-9._~-]*$/;
/** A given key must not be guessable by trying short strings; generated keys are 29 characters. */
export const minGivenLicenseKeyLength = 16;

export async function createLicense(
  db: Kysely<DB>,
  input: CreateLicenseInput,
  now = Date.now(),
): Promise<LicenseView> {
  const product = await findProductBySlug(db, input.productSlug);
  if (!product) throw ShipkeyError.spec("PRODUCT_NOT_FOUND");
  // A given key of the generated form is stored as generated keys are (license-key.ts).
  const licenseKey =
    input.licenseKey === undefined ? newLicenseKey() : normalizeLicenseKey(input.licenseKey);
  throwFirst([...licenseKeyErrors(licenseKey), ...licenseSettingsErrors(input)]);
  const inserted = await insertLicenseRow(db, {
    id: newId("lic"),
    license_key: licenseKey,
    product_id: product.id,
    status: input.status ?? licenseSettings.status.default,
    expires_at: input.expiresAt ?? null,
    edition: emptyToNull(input.edition) ?? null,
    edition_name: emptyToNull(input.editionName) ?? null,
    features: JSON.stringify(input.features ?? []),
    max_machines: input.maxMachines,
    active_machines: 0,
    customer_name: emptyToNull(input.customerName) ?? null,
    customer_email: emptyToNull(input.customerEmail) ?? null,
    note: emptyToNull(input.note) ?? null,
    external_id: emptyToNull(input.externalId) ?? null,
    max_deactivations_per_30_days: input.maxDeactivationsPer30Days ?? null,
    created_at: now,
    updated_at: now,
  });
  if (!inserted) throw new ShipkeyError("LICENSE_KEY_TAKEN", "A license with this key exists");
  return requireLicenseView(db, licenseKey);
}

/** The refusals of a given license key (normalized), in the order createLicense reports them. */
export function licenseKeyErrors(licenseKey: string): ShipkeyError[] {
  return errorsOf([
    () => assertMaxLength("licenseKey", licenseKey, limits.identifier),
    () => {
      if (!licenseKeyPattern.test(licenseKey)) {
        throw new ShipkeyError(
          "INVALID_FIELD_VALUE",
          "licenseKey may contain only letters, digits, '.', '_', '~' and '-'",
          { field: "licenseKey" },
        );
      }
    },
    () => {
      if (licenseKey.length < minGivenLicenseKeyLength) {
        throw new ShipkeyError(
          "INVALID_FIELD_VALUE",
          `licenseKey must be at least ${minGivenLicenseKeyLength} characters`,
          { field: "licenseKey" },
        );
      }
    },
  ]);
}

/** Inserts the license unless its key is taken (false then). */
async function insertLicenseRow(db: Kysely<DB>, row: Insertable<LicensesTable>): Promise<boolean> {
  const inserted = await externalIdUnique(
    db
      .insertInto("licenses")
      .values(row)
      .onConflict((oc) => oc.column("license_key").doNothing())
      .returning("id")
      .executeTakeFirst(),
  );
  return inserted !== undefined;
}

/** A write that can only break the (product, external id) unique index: EXTERNAL_ID_TAKEN then. */
export async function externalIdUnique<T>(write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    throw new ShipkeyError(
      "EXTERNAL_ID_TAKEN",
      "externalId is already used by another license of this product",
      { field: "externalId" },
    );
  }
}

/** Changes only the settings given; a change is visible to the very next request. */
export async function updateLicense(
  db: Kysely<DB>,
  licenseKey: string,
  changes: LicenseSettings,
  now = Date.now(),
): Promise<LicenseView> {
  throwFirst(licenseSettingsErrors(changes));
  const features = changes.features === undefined ? undefined : JSON.stringify(changes.features);
  const query = db
    .updateTable("licenses")
    .set({
      status: changes.status,
      expires_at: changes.expiresAt,
      edition: emptyToNull(changes.edition),
      edition_name: emptyToNull(changes.editionName),
      features,
      max_machines: changes.maxMachines,
      customer_name: emptyToNull(changes.customerName),
      customer_email: emptyToNull(changes.customerEmail),
      note: emptyToNull(changes.note),
      external_id: emptyToNull(changes.externalId),
      max_deactivations_per_30_days: changes.maxDeactivationsPer30Days,
      updated_at: now,
    })
    .where("license_key", "=", licenseKey);
  const result = await externalIdUnique(query.executeTakeFirst());
  if (result.numUpdatedRows === 0n) throw ShipkeyError.spec("LICENSE_NOT_FOUND");
  return requireLicenseView(db, licenseKey);
}
/** An empty edition is no edition: stored and returned as null. undefined means "unchanged". */
function emptyToNull(value: string | null | undefined): string | null | undefined {
  return value === "" ? null : value;
}

/** Every refusal of license settings, in the order create and update report them (the first). */
export function licenseSettingsErrors(settings: LicenseSettings): ShipkeyError[] {
  return settingErrors(licenseSettings, settings);
}
