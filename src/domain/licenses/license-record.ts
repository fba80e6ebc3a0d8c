import type { ExpressionBuilder, Kysely } from "kysely";
import { compileOnce } from "../../db/compiled-query.js";
import type { DB, LicensesTable } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { type LicenseStatus, limits } from "../../contracts/vocabulary.js";

/** A license as the license endpoints need it: its row plus its product's slug. */
export interface LicenseForUse {
  id: string;
  productSlug: string;
  status: LicenseStatus;
  expiresAt: number | null;
  edition: string | null;
  editionName: string | null;
  features: string[];
  maxMachines: number;
  activeMachines: number;
}

const licenseForUseColumns = [
  "licenses.id",
  "products.slug as product_slug",
  "licenses.status",
  "licenses.expires_at",
  "licenses.edition",
  "licenses.edition_name",
  "licenses.features",
  "licenses.max_machines",
  "licenses.active_machines",
] as const;

/** The license columns every license endpoint reads, joined with the product's slug. */
export function selectLicenseForUse(db: Kysely<DB>) {
  return db
    .selectFrom("licenses")
    .innerJoin("products", "products.id", "licenses.product_id")
    .select(licenseForUseColumns);
}

type LicenseRow = Pick<
  LicensesTable,
  | "id"
  | "status"
  | "expires_at"
  | "edition"
  | "edition_name"
  | "features"
  | "max_machines"
  | "active_machines"
> & { product_slug: string };

const findLicenseByKey = compileOnce<{ licenseKey: string }, LicenseRow>(["licenseKey"], (db, p) =>
  selectLicenseForUse(db).where("licenses.license_key", "=", p.licenseKey),
);

/**
 * Locks the license's row for the rest of the transaction (a no-op write, on both dialects), so
 * writes that count something per license (certificates, deactivations) run one at a time, and
 * reads maxMachines under that lock. No row: the license is gone.
 */
export const lockLicense = compileOnce<{ licenseId: string }, Pick<LicensesTable, "max_machines">>(
  ["licenseId"],
  (db, p) =>
    db
      .updateTable("licenses")
      .set((eb) => ({ active_machines: eb.ref("active_machines") }))
      .where("id", "=", p.licenseId)
      .returning("max_machines"),
);

/** The key of the license with this id (the audit log names licenses by id), or 404. */
export async function licenseKeyById(db: Kysely<DB>, id: string): Promise<string> {
  const row = await db
    .selectFrom("licenses")
    .select("license_key")
    .where("id", "=", id)
    .executeTakeFirst();
  if (!row) throw ShipkeyError.spec("LICENSE_NOT_FOUND");
  return row.license_key;
}

/** The license's internal id (activations and the audit log name it so). */
export async function licenseIdOfKey(db: Kysely<DB>, licenseKey: string): Promise<string> {
  const row = await db
    .selectFrom("licenses")
    .select("id")
    .where("license_key", "=", licenseKey)
    .executeTakeFirst();
  if (!row) throw ShipkeyError.spec("LICENSE_NOT_FOUND");
  return row.id;
}

/** Reads the license by key or throws 404 "Invalid license key". */
export async function requireLicenseByKey(
  db: Kysely<DB>,
  licenseKey: string,
): Promise<LicenseForUse> {
  // No stored key is longer than the limit, so an oversized key cannot match; skip the query.
  const [row] =
    licenseKey.length > limits.identifier ? [] : (await findLicenseByKey(db, { licenseKey })).rows;
  if (!row) throw ShipkeyError.spec("LICENSE_NOT_FOUND");
  return toLicenseForUse(row);
}

// One query: the license, its product's slug and whether the machine holds an active activation
// on it (EXISTS on the partial unique index of active (license, machine) pairs).
const findLicenseWithActivation = compileOnce<
  { licenseKey: string; machineId: string },
  LicenseRow & { machine_active: number | boolean }
>(["licenseKey", "machineId"], (db, p) =>
  selectLicenseForUse(db)
    .select((eb) =>
      eb
        .exists(
          eb
            .selectFrom("activations")
            .select(eb.lit(1).as("one"))
            .whereRef("activations.license_id", "=", "licenses.id")
            .where("activations.machine_id", "=", p.machineId)
            .where("activations.deactivated_at", "is", null),
        )
        .as("machine_active"),
    )
    .where("licenses.license_key", "=", p.licenseKey),
);

export interface LicenseWithMachine {
  license: LicenseForUse;
  /** The machine holds an active activation on the license. */
  machineActive: boolean;
}

/** Reads the license and whether the machine is active on it, or throws 404. */
export async function requireLicenseWithActivation(
  db: Kysely<DB>,
  input: { licenseKey: string; machineId: string },
): Promise<LicenseWithMachine> {
  // A key or machine id over the limit was never stored: the query would find nothing. The
  // machine id's own error comes later, in the spec's check order.
  const [row] =
    input.licenseKey.length > limits.identifier
      ? []
      : (
          await findLicenseWithActivation(db, {
            licenseKey: input.licenseKey,
            machineId: input.machineId.length > limits.identifier ? "" : input.machineId,
          })
        ).rows;
  if (!row) throw ShipkeyError.spec("LICENSE_NOT_FOUND");
  return {
    license: toLicenseForUse(row),
    // SQLite answers EXISTS with 0 or 1, PostgreSQL with a boolean.
    machineActive: Boolean(row.machine_active),
  };
}

export function toLicenseForUse(row: LicenseRow): LicenseForUse {
  return {
    id: row.id,
    productSlug: row.product_slug,
    status: row.status,
    expiresAt: row.expires_at,
    edition: row.edition,
    editionName: row.edition_name,
    features: parseFeatures(row.features),
    maxMachines: row.max_machines,
    activeMachines: row.active_machines,
  };
}

/** The spec's license checks in their binding order: status → expiry → product. */
export function assertLicenseUsable(
  license: LicenseForUse,
  productSlug: string,
  now: number,
): void {
  if (license.status !== "ACTIVE") throw ShipkeyError.spec("LICENSE_NOT_ACTIVE");
  if (isExpired(license.expiresAt, now)) throw ShipkeyError.spec("LICENSE_EXPIRED");
  if (license.productSlug !== productSlug) throw ShipkeyError.spec("LICENSE_PRODUCT_MISMATCH");
}

/**
 * A license whose expiry is at or before now is expired; one without an expiry never is. The
 * one definition: the functions below say it in SQL, for queries over licenses.
 */
export function isExpired(expiresAt: number | null, now: number): boolean {
  return expiresAt !== null && expiresAt <= now;
}

/** isExpired as a condition on a query over licenses (a null expiry never matches `<=`). */
export function expiredAt(eb: ExpressionBuilder<DB, "licenses">, now: number) {
  return eb("licenses.expires_at", "<=", now);
}

/** Not isExpired: no expiry, or one after now. */
export function unexpiredAt(eb: ExpressionBuilder<DB, "licenses">, now: number) {
  return eb.or([eb("licenses.expires_at", "is", null), eb("licenses.expires_at", ">", now)]);
}

/** Unexpired at `now` but expired at `until`: the licenses that expire in between. */
export function expiringBetween(eb: ExpressionBuilder<DB, "licenses">, now: number, until: number) {
  return eb.and([eb("licenses.expires_at", ">", now), expiredAt(eb, until)]);
}

export function parseFeatures(json: string): string[] {
  const value: unknown = JSON.parse(json);
  return Array.isArray(value) ? value.filter((f): f is string => typeof f === "string") : [];
}
