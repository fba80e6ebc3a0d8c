import type { Insertable, Kysely } from "kysely";
import type { DB, LicensesTable } from "../../db/schema.js";
import { isUniqueViolation } from "../../db/faults.js";
import { errorsOf, ShipkeyError, throwFirst } from "../../errors.js";
import { newId, newLicenseKey } from "../../lib/ids.js";
import { assertMaxLength, assertMultiLine, assertSingleLine } from "../limits.js";
import { assertDeactivationLimit, findProductBySlug } from "../products/products.js";
import { normalizeLicenseKey } from "./license-key.js";
import { type LicenseView, requireLicenseView } from "./license-views.js";
import { type LicenseStatus, licenseStatuses, limits } from "../../contracts/vocabulary.js";

// A license's settings as admins write them: create, update, and their refusals. (Reading a
// license: license-views.ts, show-license.ts; lists: list-licenses.ts.)

export interface LicenseSettings {
  status?: LicenseStatus;
  /** Epoch ms, or null for a license that never expires. */
  expiresAt?: number | null;
  edition?: string | null;
  editionName?: string | null;
  features?: string[];
  maxMachines?: number;
  customerName?: string | null;
  customerEmail?: string | null;
  note?: string | null;
  /** The caller's own reference (an order id), unique per product; null or "" clears it. */
  externalId?: string | null;
  /**
   * Public deactivations allowed in the trailing 30 days, overriding the product's; null: the
   * product's applies.
   */
  maxDeactivationsPer30Days?: number | null;
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
    status: input.status ?? "ACTIVE",
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
  return errorsOf([
    () => {
      if (settings.status !== undefined && !licenseStatuses.includes(settings.status)) {
        throw new ShipkeyError(
          "INVALID_FIELD_VALUE",
          `status must be one of ${licenseStatuses.join(", ")}`,
          { field: "status" },
        );
      }
    },
    () => assertMaxMachines(settings.maxMachines),
    () => assertDeactivationLimit("maxDeactivationsPer30Days", settings.maxDeactivationsPer30Days),
    () => assertMaxLength("edition", settings.edition, limits.edition),
    () => assertMaxLength("customerName", settings.customerName, limits.name),
    () => assertMaxLength("customerEmail", settings.customerEmail, limits.name),
    () => assertMaxLength("note", settings.note, limits.note),
    () => {
      if (settings.customerEmail && !/^[^\s@]+@[^\s@]+$/.test(settings.customerEmail)) {
        throw new ShipkeyError("INVALID_FIELD_VALUE", "customerEmail must be an email address", {
          field: "customerEmail",
        });
      }
    },
    () => assertMaxLength("editionName", settings.editionName, limits.edition),
    () => assertMaxLength("externalId", settings.externalId, limits.identifier),
    () => assertFeatures(settings.features),
    ...settingsTextChecks(settings),
  ]);
}

function assertMaxMachines(maxMachines: number | undefined): void {
  if (
    maxMachines !== undefined &&
    (!Number.isSafeInteger(maxMachines) || maxMachines < 0 || maxMachines > maxMachinesLimit)
  ) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `maxMachines must be an integer from 0 to ${maxMachinesLimit}`,
      { field: "maxMachines" },
    );
  }
}

function assertFeatures(features: string[] | undefined): void {
  if (features === undefined) return;
  if (features.length > limits.features) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", `at most ${limits.features} features`, {
      field: "features",
    });
  }
  for (const [i, feature] of features.entries()) {
    assertMaxLength("feature", feature, limits.feature, `features[${i}]`);
    if (feature === "")
      throw new ShipkeyError("INVALID_FIELD_VALUE", "features must not be empty", {
        field: `features[${i}]`,
      });
  }
}

/** Names and labels are one line; the note may span lines (docs/reference/security.md). */
function settingsTextChecks(settings: LicenseSettings): Array<() => void> {
  return [
    () => assertSingleLine("edition", settings.edition),
    () => assertSingleLine("editionName", settings.editionName),
    () => assertSingleLine("customerName", settings.customerName),
    () => assertSingleLine("customerEmail", settings.customerEmail),
    () => assertSingleLine("externalId", settings.externalId),
    () => {
      for (const [i, feature] of (settings.features ?? []).entries()) {
        assertSingleLine("features", feature, `features[${i}]`);
      }
    },
    () => assertMultiLine("note", settings.note),
  ];
}
