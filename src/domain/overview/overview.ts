import { type Kysely, sql } from "kysely";
import type { DB } from "../../db/schema.js";
import { type LicenseStatus, licenseStatuses } from "../../contracts/vocabulary.js";
import { leasesEndingWithin } from "../licenses/machine-leases.js";
import { browseLicenses, type LicenseView } from "../licenses/manage-licenses.js";
import { findProductBySlug } from "../products/products.js";
import { dayOf, type LicenseEvent, licenseEvents } from "../releases/usage-counts.js";
import { type UsageReport, usageReport } from "../releases/usage-report.js";

/** Days the overview's daily counts cover, today included. */
export const overviewDays = 30;

const day = 86_400_000;

/** What the overview shows, for one product or (product null) all of them. */
export interface Overview {
  product: string | null;
  /** The covered UTC days, oldest first. */
  days: string[];
  /** Per event, its count on each of `days`. */
  daily: Record<LicenseEvent, number[]>;
  /** Refused activations and validations over the days, by code, most first. */
  refusals: Array<{ event: LicenseEvent; code: string; count: number }>;
  byStatus: Array<{ status: LicenseStatus; count: number }>;
  expiringSoon: number;
  /** Active machines whose lease ends within 7 days (products with machineLeaseDays). */
  leasesEndingSoon: number;
  atLimit: { items: LicenseView[]; total: number };
  /** The product's usage: machines per app version, update checks; null for all products. */
  usage: UsageReport | null;
}

/**
 * The overview's numbers: the daily counters of the last days (a month of rows at most per
 * product and event), license counts by status, and the licenses at their machine limit.
 */
export async function overview(
  db: Kysely<DB>,
  productSlug: string | null,
  now = Date.now(),
): Promise<Overview> {
  const product = productSlug === null ? null : await findProductBySlug(db, productSlug);
  const productId = product?.id ?? null;
  const days = Array.from({ length: overviewDays }, (_, i) =>
    dayOf(now - (overviewDays - 1 - i) * day),
  );
  const counted = await dailyCounts(db, productId, days[0] ?? dayOf(now));
  const daily = Object.fromEntries(
    licenseEvents.map((event) => [event, days.map(() => 0)]),
  ) as Record<LicenseEvent, number[]>;
  const refusals = new Map<string, { event: LicenseEvent; code: string; count: number }>();
  for (const row of counted) {
    const event = licenseEvents.find((e) => e === row.event);
    const index = days.indexOf(row.day);
    if (event === undefined || index < 0) continue;
    daily[event][index] = (daily[event][index] ?? 0) + row.count;
    if (row.code !== "") {
      const key = `${event}\u0000${row.code}`;
      const refusal = refusals.get(key) ?? { event, code: row.code, count: 0 };
      refusal.count += row.count;
      refusals.set(key, refusal);
    }
  }
  const filter = { product: productSlug ?? undefined, limit: 10 };
  const order = { sort: "machines", descending: true, offset: 0 } as const;
  return {
    product: product?.slug ?? null,
    days,
    daily,
    refusals: [...refusals.values()].sort((a, b) => b.count - a.count),
    byStatus: await licensesByStatus(db, productId),
    expiringSoon: (
      await browseLicenses(db, { ...filter, expiringWithinDays: 30, limit: 1 }, order, now)
    ).total,
    leasesEndingSoon: await leasesEndingWithin(db, productId, now, 7 * day),
    atLimit: await browseLicenses(db, { ...filter, atLimit: true }, order, now),
    usage: product ? await usageReport(db, product.slug, overviewDays, now) : null,
  };
}

async function dailyCounts(db: Kysely<DB>, productId: string | null, since: string) {
  let query = db
    .selectFrom("daily_counts")
    .select(["day", "event", "code", (eb) => eb.fn.sum<number | string>("count").as("count")])
    .where("day", ">=", since)
    .groupBy(["day", "event", "code"]);
  if (productId !== null) query = query.where("product_id", "=", productId);
  const rows = await query.execute();
  return rows.map((row) => ({ ...row, count: Number(row.count) }));
}

/**
 * The product's licenses (or all) by status, the statuses with any. A GROUP BY would walk all of
 * them; instead the total is counted (on SQLite from the pages of an index, for all products)
 * and the other statuses, few, from their partial index; ACTIVE is the rest.
 */
async function licensesByStatus(db: Kysely<DB>, productId: string | null) {
  let total = db
    .selectFrom("licenses")
    .select((eb) => eb.fn.countAll<number | string>().as("count"));
  // Written as the partial index licenses_not_active_idx is (a literal, not a parameter), so
  // that both databases' planners use it.
  let others = db
    .selectFrom("licenses")
    .select(["status", (eb) => eb.fn.countAll<number | string>().as("count")])
    .where("status", "<>", sql.lit("ACTIVE" as const))
    .groupBy("status");
  if (productId !== null) {
    total = total.where("product_id", "=", productId);
    others = others.where("product_id", "=", productId);
  }
  const [all, rows] = await Promise.all([total.executeTakeFirst(), others.execute()]);
  const counts = new Map(rows.map((row) => [row.status, Number(row.count)]));
  const notActive = rows.reduce((sum, row) => sum + Number(row.count), 0);
  counts.set("ACTIVE", Number(all?.count ?? 0) - notActive);
  return licenseStatuses
    .map((status) => ({ status, count: counts.get(status) ?? 0 }))
    .filter((s) => s.count > 0);
}
