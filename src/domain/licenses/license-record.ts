import { type Kysely, type SelectQueryBuilder, SqliteAdapter, sql } from "kysely";
import { compileOnce } from "../../db/compiled-query.js";
import { batchedPerTurn, batchesPgReads } from "../../db/pg-read-batch.js";
import type { DB, LicensesTable, LicenseStatus } from "../../db/schema.js";
import { licenseSlot } from "../../db/sqlite-license-slot.js";
import { ShipkeyError } from "../../errors.js";
import { limits } from "../limits.js";

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

type KeyAndSlot = { licenseKey: string; slot: number };

/**
 * SQLite finds a license by key in its slot first (one B-tree search by rowid), and by the key
 * index only when the slot holds no row with that key (src/db/sqlite-license-slot.ts). LIMIT 1
 * ends the compound statement at the first row, so the second search runs only for a license
 * out of its slot or a key that matches none (tested, test/sqlite-license-slot.test.ts).
 */
function inSlotThenByKey<Row>(
  select: () => SelectQueryBuilder<DB, "licenses" | "products", Row>,
  p: KeyAndSlot,
) {
  return select()
    .where(sql`licenses.rowid`, "=", p.slot)
    .where("licenses.license_key", "=", p.licenseKey)
    .unionAll(select().where("licenses.license_key", "=", p.licenseKey))
    .limit(sql.lit(1)); // a literal: a bound LIMIT re-prepares the statement (compiled-query.ts)
}

const findLicenseByKeyOnSqlite = compileOnce<KeyAndSlot, LicenseRow>(
  ["licenseKey", "slot"],
  (db, p) => inSlotThenByKey(() => selectLicenseForUse(db), p),
);

const findLicenseByKeyOnPostgres = compileOnce<{ licenseKey: string }, LicenseRow>(
  ["licenseKey"],
  (db, p) => selectLicenseForUse(db).where("licenses.license_key", "=", p.licenseKey),
);

function findLicenseByKey(db: Kysely<DB>, licenseKey: string): Promise<LicenseRow[]> {
  return db.getExecutor().adapter instanceof SqliteAdapter
    ? findLicenseByKeyOnSqlite(db, { licenseKey, slot: licenseSlot(licenseKey) })
    : findLicenseByKeyOnPostgres(db, { licenseKey });
}

/** Reads the license by key or throws 404 "Invalid license key". */
export async function requireLicenseByKey(
  db: Kysely<DB>,
  licenseKey: string,
): Promise<LicenseForUse> {
  // No stored key is longer than the limit, so an oversized key cannot match; skip the query.
  const [row] = licenseKey.length > limits.identifier ? [] : await findLicenseByKey(db, licenseKey);
  if (!row) throw ShipkeyError.spec("LICENSE_NOT_FOUND");
  return toLicenseForUse(row);
}

type LicenseWithActivationRow = LicenseRow & {
  machine_active: number | boolean;
  activation_id?: string | null;
};

// SQLite, one query: the license, its product's slug and whether the machine holds an active
// activation on it, answered without reading the activations table (profiled,
// docs/performance.md): from the license row's list of active machines where the row keeps one
// (migration 0006), else from EXISTS on the partial unique index. Comparing inside SQLite binds
// the machine id the same way on both paths (a lone UTF-16 surrogate becomes U+FFFD in both).
const findLicenseWithActivationOnSqlite = compileOnce<
  KeyAndSlot & { machineId: string },
  LicenseWithActivationRow
>(["licenseKey", "slot", "machineId"], (db, p) =>
  inSlotThenByKey(
    () =>
      selectLicenseForUse(db).select((eb) => {
        const inIndex = eb.exists(
          eb
            .selectFrom("activations")
            .select(eb.lit(1).as("one"))
            .whereRef("activations.license_id", "=", "licenses.id")
            .where("activations.machine_id", "=", p.machineId)
            .where("activations.deactivated_at", "is", null),
        );
        return sql<number>`case when licenses.active_machine_ids is null then ${inIndex}
        else exists (select 1 from json_each(licenses.active_machine_ids)
                     where value = ${p.machineId}) end`.as("machine_active");
      }),
    p,
  ),
);

// PostgreSQL: the same answer for many (license key, machine) pairs in one statement, which
// every validate of one event-loop turn shares (src/db/pg-read-batch.ts). PostgreSQL visits the
// activation's row either way (visibility), so it reads its id, which the last-seen writes then
// find by primary key. `ord` numbers the wanted pairs from 1; a key that matches no license has
// no row.
const findLicensesWithActivations = compileOnce<
  { licenseKeys: string[]; machineIds: Array<string | null> },
  LicenseWithActivationRow & { ord: number }
>(["licenseKeys", "machineIds"], (db, p) =>
  db
    .selectFrom(
      sql<{
        license_key: string;
        machine_id: string;
        ord: number;
      }>`(select * from unnest(${p.licenseKeys}::text[], ${p.machineIds}::text[]) with ordinality as u(license_key, machine_id, ord))`.as(
        "wanted",
      ),
    )
    .innerJoin("licenses", "licenses.license_key", "wanted.license_key")
    .innerJoin("products", "products.id", "licenses.product_id")
    .leftJoin("activations", (join) =>
      join
        .onRef("activations.license_id", "=", "licenses.id")
        .onRef("activations.machine_id", "=", "wanted.machine_id")
        .on("activations.deactivated_at", "is", null),
    )
    .select(licenseForUseColumns)
    .select([
      "wanted.ord",
      "activations.id as activation_id",
      sql<boolean>`activations.id is not null`.as("machine_active"),
    ]),
);

type LicenseAndMachine = { licenseKey: string; machineId: string };

/** The rows for each pair, in order (PostgreSQL). */
async function findOnPostgres(
  db: Kysely<DB>,
  inputs: LicenseAndMachine[],
): Promise<LicenseWithActivationRow[][]> {
  const rows = await findLicensesWithActivations(db, {
    licenseKeys: inputs.map((input) => input.licenseKey),
    // A machine id over the limit was never stored, so it cannot match; null keeps it out of
    // the statement (the caller refuses it after the license checks, in the spec's order).
    machineIds: inputs.map((input) =>
      input.machineId.length > limits.identifier ? null : input.machineId,
    ),
  });
  const perInput = inputs.map((): LicenseWithActivationRow[] => []);
  for (const row of rows) perInput[row.ord - 1]?.push(row);
  return perInput;
}

const findOnPostgresPerTurn = batchedPerTurn(findOnPostgres);

async function findLicenseWithActivation(
  db: Kysely<DB>,
  input: LicenseAndMachine,
): Promise<LicenseWithActivationRow[]> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) {
    return findLicenseWithActivationOnSqlite(db, { ...input, slot: licenseSlot(input.licenseKey) });
  }
  // A transaction reads on its own connection, where its own writes are visible.
  if (batchesPgReads(db)) return findOnPostgresPerTurn(db, input);
  return (await findOnPostgres(db, [input]))[0] ?? [];
}

export interface LicenseWithMachine {
  license: LicenseForUse;
  /** The machine holds an active activation on the license. */
  machineActive: boolean;
  /** That activation's id where the query read it (PostgreSQL); null on SQLite. */
  activationId: string | null;
}

/** Reads the license and whether the machine is active on it, or throws 404. */
export async function requireLicenseWithActivation(
  db: Kysely<DB>,
  input: LicenseAndMachine,
): Promise<LicenseWithMachine> {
  const [row] =
    input.licenseKey.length > limits.identifier ? [] : await findLicenseWithActivation(db, input);
  if (!row) throw ShipkeyError.spec("LICENSE_NOT_FOUND");
  return {
    license: toLicenseForUse(row),
    // SQLite answers EXISTS with 0 or 1, PostgreSQL with a boolean.
    machineActive: Boolean(row.machine_active),
    activationId: row.activation_id ?? null,
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

/** A license whose expiry is at or before now is expired. */
export function isExpired(expiresAt: number | null, now: number): boolean {
  return expiresAt !== null && expiresAt <= now;
}

export function parseFeatures(json: string): string[] {
  const value: unknown = JSON.parse(json);
  return Array.isArray(value) ? value.filter((f): f is string => typeof f === "string") : [];
}
