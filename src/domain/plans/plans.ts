import type { Kysely, Selectable, Updateable } from "kysely";
import type { DB } from "../../db/schema.js";
import { isUniqueViolation } from "../../db/faults.js";
import { inTransaction } from "../../db/transaction.js";
import { errorsOf, ShipkeyError, throwFirst } from "../../errors.js";
import { newId } from "../../lib/ids.js";
import { isoOrNull, toIso } from "../../lib/time.js";
import { assertMaxLength, assertSingleLine } from "../limits.js";
import { licenseSettingsErrors } from "../licenses/manage-licenses.js";
import { parseFeatures } from "../licenses/license-record.js";
import { requireProduct } from "../products/products.js";
import {
  limits,
  planRanges,
  planReactions,
  type PlanReaction,
} from "../../contracts/vocabulary.js";
import type { Plan } from "../../contracts/plans.js";

export type { Plan };

/** A plan's settings; every one but slug can change. */
/** What a full refund and a chargeback do under a plan that names no rule (or under no plan). */
export const defaultReactions = { refund: "revoke", chargeback: "suspend" } as const;

export interface PlanSettings {
  name?: string;
  edition?: string | null;
  editionName?: string | null;
  features?: string[];
  maxMachines?: number;
  durationDays?: number | null;
  updatesWindowDays?: number | null;
  subscription?: boolean;
  graceDays?: number;
  onRefund?: PlanReaction;
  onChargeback?: PlanReaction;
  floatingLeaseMinutes?: number | null;
}

export interface NewPlan extends PlanSettings {
  slug: string;
  name: string;
  maxMachines: number;
}

// As a product's: lowercase letters, digits and inner dashes (a vendor's code in its store).
const slugPattern = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

function invalid(field: string, message: string): never {
  throw new ShipkeyError("INVALID_FIELD_VALUE", message, { field });
}

function assertWhole(field: string, value: number | null | undefined, min: number, max: number) {
  if (value === undefined || value === null) return;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    invalid(field, `${field} must be a whole number from ${min} to ${max}`);
  }
}

/** Every refusal of plan settings, in a fixed order (the first is reported). */
export function planSettingsErrors(settings: PlanSettings): ShipkeyError[] {
  const { edition, editionName, features } = settings;
  return errorsOf([
    () => assertMaxLength("name", settings.name, limits.name),
    () => assertSingleLine("name", settings.name),
    () => {
      if (settings.name !== undefined && settings.name.trim() === "") {
        invalid("name", "name is required");
      }
    },
    ...licenseSettingsErrors({ edition, editionName, features }).map((err) => () => {
      throw err;
    }),
    () => assertWhole("maxMachines", settings.maxMachines, 1, limits.maxMachines),
    () => assertWhole("durationDays", settings.durationDays, 1, planRanges.maxDays),
    () => assertWhole("updatesWindowDays", settings.updatesWindowDays, 1, planRanges.maxDays),
    () => assertWhole("graceDays", settings.graceDays, 0, planRanges.maxGraceDays),
    () => {
      for (const field of ["onRefund", "onChargeback"] as const) {
        const value = settings[field];
        if (value !== undefined && !planReactions.includes(value)) {
          invalid(field, `${field} must be one of ${planReactions.join(", ")}`);
        }
      }
    },
    () =>
      assertWhole(
        "floatingLeaseMinutes",
        settings.floatingLeaseMinutes,
        planRanges.minLeaseMinutes,
        planRanges.maxLeaseMinutes,
      ),
  ]);
}

/** A subscription needs a period: its durationDays, used when a payment names no period end. */
function assertPeriod(plan: { subscription: boolean; durationDays: number | null }): void {
  if (plan.subscription && plan.durationDays === null) {
    invalid("durationDays", "a subscription plan needs durationDays (its period)");
  }
}

type PlanRow = Selectable<DB["plans"]> & { product_slug: string; license_count: unknown };

function selectPlans(db: Kysely<DB>) {
  return db
    .selectFrom("plans")
    .innerJoin("products", "products.id", "plans.product_id")
    .selectAll("plans")
    .select((eb) => [
      "products.slug as product_slug",
      eb
        .selectFrom("licenses")
        .select((c) => c.fn.countAll<number | string | bigint>().as("n"))
        .whereRef("licenses.plan_id", "=", "plans.id")
        .as("license_count"),
    ]);
}

function toPlan(row: PlanRow): Plan {
  return {
    id: row.id,
    product: row.product_slug,
    slug: row.slug,
    name: row.name,
    edition: row.edition,
    editionName: row.edition_name,
    features: parseFeatures(row.features),
    maxMachines: row.max_machines,
    durationDays: row.duration_days,
    updatesWindowDays: row.updates_window_days,
    subscription: row.subscription === 1,
    graceDays: row.grace_days,
    onRefund: row.on_refund,
    onChargeback: row.on_chargeback,
    floatingLeaseMinutes: row.floating_lease_minutes,
    archivedAt: isoOrNull(row.archived_at),
    licenses: Number(row.license_count ?? 0),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

/** A product's plans, oldest first, archived ones included. */
export async function listPlans(db: Kysely<DB>, productSlug: string): Promise<Plan[]> {
  const product = await requireProduct(db, productSlug);
  const rows = await selectPlans(db)
    .where("plans.product_id", "=", product.id)
    .orderBy("plans.created_at")
    .orderBy("plans.id")
    .execute();
  return rows.map(toPlan);
}

export async function findPlan(
  db: Kysely<DB>,
  productSlug: string,
  planSlug: string,
): Promise<Plan | null> {
  if (planSlug.length > limits.identifier) return null;
  const row = await selectPlans(db)
    .where("products.slug", "=", productSlug)
    .where("plans.slug", "=", planSlug)
    .executeTakeFirst();
  return row ? toPlan(row) : null;
}

/** The plan, or 404 PRODUCT_NOT_FOUND / PLAN_NOT_FOUND. */
export async function requirePlan(
  db: Kysely<DB>,
  productSlug: string,
  planSlug: string,
): Promise<Plan> {
  const plan = await findPlan(db, productSlug, planSlug);
  if (plan) return plan;
  await requireProduct(db, productSlug);
  throw new ShipkeyError("PLAN_NOT_FOUND", `Product "${productSlug}" has no plan "${planSlug}"`);
}

/** A plan by its id (what a license's planId and a payment integration's price map name). */
export async function findPlanById(db: Kysely<DB>, id: string): Promise<Plan | null> {
  if (id.length > limits.id) return null;
  const row = await selectPlans(db).where("plans.id", "=", id).executeTakeFirst();
  return row ? toPlan(row) : null;
}

export async function createPlan(
  db: Kysely<DB>,
  productSlug: string,
  input: NewPlan,
  now = Date.now(),
): Promise<Plan> {
  const product = await requireProduct(db, productSlug);
  throwFirst([
    ...errorsOf([
      () => assertMaxLength("slug", input.slug, limits.identifier),
      () => {
        if (!slugPattern.test(input.slug)) {
          invalid(
            "slug",
            "slug must be lowercase letters, digits and dashes, starting and ending with a letter or digit",
          );
        }
      },
    ]),
    ...planSettingsErrors(input),
  ]);
  const subscription = input.subscription ?? false;
  const durationDays = input.durationDays ?? null;
  assertPeriod({ subscription, durationDays });
  const id = newId("pln", now);
  try {
    await db
      .insertInto("plans")
      .values({
        id,
        product_id: product.id,
        slug: input.slug,
        name: input.name,
        edition: emptyToNull(input.edition) ?? null,
        edition_name: emptyToNull(input.editionName) ?? null,
        features: JSON.stringify(input.features ?? []),
        max_machines: input.maxMachines,
        duration_days: durationDays,
        updates_window_days: input.updatesWindowDays ?? null,
        subscription: subscription ? 1 : 0,
        grace_days: input.graceDays ?? 0,
        on_refund: input.onRefund ?? defaultReactions.refund,
        on_chargeback: input.onChargeback ?? defaultReactions.chargeback,
        floating_lease_minutes: input.floatingLeaseMinutes ?? null,
        archived_at: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    throw new ShipkeyError(
      "PLAN_SLUG_TAKEN",
      `Product "${productSlug}" has a plan with slug "${input.slug}"`,
      { field: "slug" },
    );
  }
  return requirePlan(db, productSlug, input.slug);
}

/** Changes the given settings; no license changes (each holds a copy of its plan's settings). */
export async function updatePlan(
  db: Kysely<DB>,
  productSlug: string,
  planSlug: string,
  changes: PlanSettings,
  now = Date.now(),
): Promise<Plan> {
  throwFirst(planSettingsErrors(changes));
  return inTransaction(db, async (trx) => {
    const before = await requirePlan(trx, productSlug, planSlug);
    assertPeriod({
      subscription: changes.subscription ?? before.subscription,
      durationDays: changes.durationDays === undefined ? before.durationDays : changes.durationDays,
    });
    const features = changes.features === undefined ? undefined : JSON.stringify(changes.features);
    await writePlan(trx, before.id, {
      name: changes.name,
      edition: emptyToNull(changes.edition),
      edition_name: emptyToNull(changes.editionName),
      features,
      max_machines: changes.maxMachines,
      duration_days: changes.durationDays,
      updates_window_days: changes.updatesWindowDays,
      subscription: changes.subscription === undefined ? undefined : changes.subscription ? 1 : 0,
      grace_days: changes.graceDays,
      on_refund: changes.onRefund,
      on_chargeback: changes.onChargeback,
      floating_lease_minutes: changes.floatingLeaseMinutes,
      updated_at: now,
    });
    return requirePlan(trx, productSlug, planSlug);
  });
}

/** Archives (or puts back in use) a plan; an archived plan keeps its first archivedAt. */
export async function setPlanArchived(
  db: Kysely<DB>,
  productSlug: string,
  planSlug: string,
  archived: boolean,
  now = Date.now(),
): Promise<Plan> {
  const plan = await requirePlan(db, productSlug, planSlug);
  if ((plan.archivedAt !== null) !== archived) {
    await writePlan(db, plan.id, { archived_at: archived ? now : null, updated_at: now });
  }
  return requirePlan(db, productSlug, planSlug);
}

/** Deletes a plan that made no license; else 409 PLAN_IN_USE (archive it instead). */
export async function deletePlan(
  db: Kysely<DB>,
  productSlug: string,
  planSlug: string,
): Promise<Plan> {
  const plan = await requirePlan(db, productSlug, planSlug);
  const deleted = await db
    .deleteFrom("plans")
    .where("id", "=", plan.id)
    .where((eb) =>
      eb.not(
        eb.exists(eb.selectFrom("licenses").select("id").whereRef("plan_id", "=", "plans.id")),
      ),
    )
    .executeTakeFirst();
  if (deleted.numDeletedRows === 0n) {
    throw new ShipkeyError("PLAN_IN_USE", `Plan "${planSlug}" has licenses; archive it instead`);
  }
  return plan;
}

async function writePlan(db: Kysely<DB>, id: string, changes: Updateable<DB["plans"]>) {
  await db.updateTable("plans").set(changes).where("id", "=", id).execute();
}

/** The settings whose value differs between two views of one plan, with old and new value. */
export function planChanges(
  before: Plan,
  after: Plan,
): Record<string, { from: unknown; to: unknown }> {
  const names = Object.keys(after).filter(
    (name) => !["updatedAt", "licenses"].includes(name),
  ) as (keyof Plan)[];
  return Object.fromEntries(
    names
      .filter((name) => JSON.stringify(before[name]) !== JSON.stringify(after[name]))
      .map((name) => [name, { from: before[name], to: after[name] }]),
  );
}

/** An empty edition is no edition. undefined means "unchanged". */
function emptyToNull(value: string | null | undefined): string | null | undefined {
  return value === "" ? null : value;
}
