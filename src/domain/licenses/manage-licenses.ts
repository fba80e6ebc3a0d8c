import { type Insertable, type Kysely, sql } from "kysely";
import { foldedForLike } from "../../db/case-folding.js";
import { type DB, type LicensesTable } from "../../db/schema.js";
import { isUniqueViolation } from "../../db/faults.js";
import { errorsOf, ShipkeyError, throwFirst } from "../../errors.js";
import { newId, newLicenseKey } from "../../lib/ids.js";
import { isoOrNull, toIso } from "../../lib/time.js";
import { assertMaxLength, assertMultiLine, assertSingleLine } from "../limits.js";
import { decodeCursor, encodeCursor, type Page } from "../pagination.js";
import { assertDeactivationLimit, findProductBySlug } from "../products/products.js";
import { licenseIdOfKey, parseFeatures } from "./license-record.js";
import { deactivationWindowMs } from "./deactivate-machine.js";
import { listActiveMachines, type MachinesFrom } from "./license-machines.js";
import { normalizeLicenseKey } from "./license-key.js";
import { listOfflinePlaces } from "./offline-places.js";
import { type LicenseStatus, licenseStatuses, limits } from "../../contracts/vocabulary.js";
import type { License, LicenseDetail, Machine, PastActivation } from "../../contracts/admin.js";

export type LicenseView = License;
export type MachineView = Machine;

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
  /** The plan it is made from (domain/plans/license-from-plan.ts), and its updates window's end. */
  planId?: string | null;
  updatesUntil?: number | null;
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
    plan_id: input.planId ?? null,
    updates_until: input.updatesUntil ?? null,
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

export type PastActivationView = PastActivation;

/** Active machines a license's answer embeds: the first page; the rest are a cursor away. */
export const embeddedMachines = 200;

/**
 * A license with a page of its active machines (by default the first `embeddedMachines`, in
 * activation order) and, newest first, its ended activations (at most 100). `activeMachines`
 * counts every active machine; `machinesNextCursor` continues the machines at the machines route.
 */
export async function showLicense(
  db: Kysely<DB>,
  licenseKey: string,
  now = Date.now(),
  machinesPage: MachinesFrom & { limit?: number } = {},
): Promise<LicenseDetail> {
  const license = await requireLicenseView(db, licenseKey);
  const licenseId = await licenseIdOfKey(db, licenseKey);
  const seats = await seatFacts(db, licenseKey, now);
  const machines = await listActiveMachines(
    db,
    licenseId,
    {
      ...machinesPage,
      limit: machinesPage.limit ?? embeddedMachines,
      leaseDays: seats.machineLeaseDays,
    },
    now,
  );
  const past = await db
    .selectFrom("activations")
    .select([
      "machine_id",
      "machine_name",
      "platform",
      "activated_at",
      "last_seen_at",
      "deactivated_at",
      "deactivated_by",
      "app_version",
    ])
    .where("license_id", "=", licenseId)
    .where("deactivated_at", "is not", null)
    .orderBy("deactivated_at", "desc")
    .limit(100)
    .execute();
  return {
    ...license,
    machines: machines.items,
    machinesNextCursor: machines.nextCursor,
    ...seats,
    offlinePlaces: await listOfflinePlaces(db, licenseId, now),
    pastActivations: past.map((m) => ({
      machineId: m.machine_id,
      machineName: m.machine_name,
      platform: m.platform,
      activatedAt: toIso(m.activated_at),
      lastSeenAt: toIso(m.last_seen_at),
      appVersion: m.app_version,
      deactivatedAt: toIso(m.deactivated_at ?? m.last_seen_at),
      deactivatedBy: m.deactivated_by,
    })),
  };
}

/** The license's product's lease and the app's deactivations the churn limit counts now. */
async function seatFacts(db: Kysely<DB>, licenseKey: string, now: number) {
  const row = await db
    .selectFrom("licenses")
    .innerJoin("products", "products.id", "licenses.product_id")
    .select((eb) => [
      "products.machine_lease_days",
      "products.offline_allowance",
      eb
        .selectFrom("activations")
        .select((c) => c.fn.countAll<number | string | bigint>().as("n"))
        .whereRef("activations.license_id", "=", "licenses.id")
        .where("activations.deactivated_at", ">", now - deactivationWindowMs)
        .where("activations.deactivated_by", "=", "client")
        .as("ended"),
    ])
    .where("licenses.license_key", "=", licenseKey)
    .executeTakeFirst();
  return {
    machineLeaseDays: row?.machine_lease_days ?? null,
    offlineAllowance: row?.offline_allowance ?? 0,
    deactivationsLast30Days: Number(row?.ended ?? 0),
  };
}

export interface LicenseFilter {
  product?: string;
  status?: LicenseStatus;
  /** true: only expired; false: only unexpired (or never expiring). */
  expired?: boolean;
  /** Key prefix, or part of the customer's name or email, the external id or the note. */
  q?: string;
  externalId?: string;
  /** Only licenses whose machines fill every slot. */
  atLimit?: boolean;
  /** Only unexpired licenses that expire within this many days. */
  expiringWithinDays?: number;
  /** Only licenses on which this machine is active. */
  machineId?: string;
  /** A limited API key's products (ids): only their licenses. */
  productIds?: readonly string[] | null;
  limit: number;
  cursor?: string;
}

/** The orders a list of licenses can be sorted in. */
export const licenseSorts = ["created", "expires", "customer", "machines"] as const;
export type LicenseSort = (typeof licenseSorts)[number];

const sortColumns = {
  created: "licenses.created_at",
  expires: "licenses.expires_at",
  customer: "licenses.customer_name",
  machines: "licenses.active_machines",
} as const;

/** Newest first, cursor-paginated (the admin API, the CSV export): each page an index seek. */
export async function listLicenses(
  db: Kysely<DB>,
  filter: LicenseFilter,
  now = Date.now(),
): Promise<Page<LicenseView>> {
  let query = licenseViewsOf(filteredLicenses(db, filter, now))
    .orderBy("licenses.created_at", "desc")
    .orderBy("licenses.id", "desc")
    .limit(filter.limit + 1);
  if (filter.cursor !== undefined) {
    const { at, id } = decodeCursor(filter.cursor);
    // A row value, so that the next page starts where the index holds the cursor.
    query = query.where((eb) =>
      eb(eb.refTuple("licenses.created_at", "licenses.id"), "<", eb.tuple(at, id)),
    );
  }
  const rows = await query.execute();
  const last = rows[filter.limit - 1];
  return {
    items: rows.slice(0, filter.limit).map(toLicenseView),
    nextCursor: rows.length > filter.limit && last ? encodeCursor(last.created_at, last.id) : null,
  };
}

/**
 * One numbered page of the licenses a filter matches, in the order asked, and how many match.
 * The page's ids come first, from the licenses alone (an index when one holds the order, and
 * without reading rows to skip earlier pages), then those rows with their product.
 */
export async function browseLicenses(
  db: Kysely<DB>,
  filter: Omit<LicenseFilter, "cursor">,
  order: { sort: LicenseSort; descending: boolean; offset: number },
  now = Date.now(),
): Promise<{ items: LicenseView[]; total: number }> {
  const direction = order.descending ? "desc" : "asc";
  const ids = filteredLicenses(db, filter, now)
    .select("licenses.id")
    .orderBy(sortKey(order.sort, narrows(filter)), direction)
    .orderBy("licenses.id", direction)
    .limit(filter.limit)
    .offset(order.offset);
  const rows = await selectLicenseViews(db)
    .where("licenses.id", "in", ids)
    .orderBy(sortColumns[order.sort], direction)
    .orderBy("licenses.id", direction)
    .execute();
  // A page that is not full, and not past the end, tells the total without counting.
  if (rows.length < filter.limit && (rows.length > 0 || order.offset === 0)) {
    return { items: rows.map(toLicenseView), total: order.offset + rows.length };
  }
  const counted = await filteredLicenses(db, filter, now)
    .select((eb) => eb.fn.countAll<string | number>().as("total"))
    .executeTakeFirst();
  return { items: rows.map(toLicenseView), total: Number(counted?.total ?? 0) };
}

/**
 * Whether the filter keeps few licenses that an index finds (a status other than ACTIVE, at the
 * limit, expiring soon, one external id or machine): those are read and sorted, rather than
 * walking every license in the order's index to find them.
 */
function narrows(filter: Omit<LicenseFilter, "cursor">): boolean {
  return (
    (filter.status !== undefined && filter.status !== "ACTIVE") ||
    filter.atLimit === true ||
    filter.expiringWithinDays !== undefined ||
    filter.externalId !== undefined ||
    (filter.machineId !== undefined && filter.machineId !== "")
  );
}

/** The sort's column, or (narrowing filters) the same values as an expression no index serves. */
function sortKey(sort: LicenseSort, narrowing: boolean) {
  const column = sql.ref(sortColumns[sort]);
  if (!narrowing) return column;
  return sort === "customer" ? sql<string | null>`${column} || ''` : sql<number>`${column} + 0`;
}

/**
 * The licenses a filter matches, before anything is selected: the licenses alone (a product's
 * slug becomes its id by a subquery), so a count or a page's ids read nothing else.
 */
function filteredLicenses(db: Kysely<DB>, filter: Omit<LicenseFilter, "cursor">, now: number) {
  let query = db.selectFrom("licenses");
  if (filter.product !== undefined) {
    const productId = db
      .selectFrom("products")
      .select("products.id")
      .where("products.slug", "=", filter.product);
    query = query.where("licenses.product_id", "=", productId);
  }
  if (filter.productIds !== undefined && filter.productIds !== null) {
    // "" matches no id and keeps the list non-empty (an empty IN list is not SQL).
    query = query.where("licenses.product_id", "in", [...filter.productIds, ""]);
  }
  if (filter.status !== undefined) query = query.where("licenses.status", "=", filter.status);
  if (filter.status !== undefined && filter.status !== "ACTIVE") {
    // The partial index of the licenses that are not ACTIVE applies when its condition is here.
    query = query.where("licenses.status", "<>", sql.lit("ACTIVE" as const));
  }
  if (filter.externalId !== undefined) {
    query = query.where("licenses.external_id", "=", filter.externalId);
  }
  if (filter.expired === true) {
    query = query
      .where("licenses.expires_at", "is not", null)
      .where("licenses.expires_at", "<=", now);
  } else if (filter.expired === false) {
    query = query.where((eb) =>
      eb.or([eb("licenses.expires_at", "is", null), eb("licenses.expires_at", ">", now)]),
    );
  }
  if (filter.expiringWithinDays !== undefined) {
    query = query
      .where("licenses.expires_at", ">", now)
      .where("licenses.expires_at", "<=", now + filter.expiringWithinDays * 86_400_000);
  }
  if (filter.atLimit === true) {
    query = query.where((eb) =>
      eb("licenses.active_machines", ">=", eb.ref("licenses.max_machines")),
    );
  }
  if (filter.machineId !== undefined && filter.machineId !== "") {
    const machineId = filter.machineId;
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom("activations")
          .select("activations.id")
          .whereRef("activations.license_id", "=", "licenses.id")
          .where("activations.machine_id", "=", machineId)
          .where("activations.deactivated_at", "is", null),
      ),
    );
  }
  if (filter.q !== undefined && filter.q !== "") {
    const escaped = filter.q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`);
    const contains = sql`${`%${escaped}%`} escape '\\'`;
    const folded = (column: string) => foldedForLike(db, column);
    query = query.where((eb) =>
      eb.or([
        eb(folded("licenses.license_key"), "like", sql`${`${escaped}%`} escape '\\'`),
        eb(folded("licenses.customer_name"), "like", contains),
        eb(folded("licenses.customer_email"), "like", contains),
        eb(folded("licenses.external_id"), "like", contains),
        eb(folded("licenses.note"), "like", contains),
      ]),
    );
  }
  return query;
}

/** What a license view needs, selected from filtered licenses. */
function licenseViewsOf(query: ReturnType<typeof filteredLicenses>) {
  return query
    .innerJoin("products", "products.id", "licenses.product_id")
    .selectAll("licenses")
    .select("products.slug as product_slug");
}

function selectLicenseViews(db: Kysely<DB>) {
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

const settingNames = [
  "status",
  "expiresAt",
  "edition",
  "editionName",
  "features",
  "maxMachines",
  "customerName",
  "customerEmail",
  "note",
  "externalId",
  "maxDeactivationsPer30Days",
] as const satisfies ReadonlyArray<keyof LicenseSettings & keyof LicenseView>;

/** The settings whose value differs between two views of one license, in a fixed order. */
export function changedSettings(
  before: LicenseView,
  after: LicenseView,
): (typeof settingNames)[number][] {
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

function toLicenseView(row: DB["licenses"] & { product_slug: string }): LicenseView {
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
    planId: row.plan_id,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
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
