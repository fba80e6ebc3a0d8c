import { type IgnoredPaymentEvents, ignoredPaymentEvents } from "./ignored-events.js";
import { type Kysely, sql } from "kysely";
import type { DB } from "../../db/schema.js";
import { isoOrNull, toIso } from "../../lib/time.js";
import { expiredAt } from "../licenses/license-record.js";
import { leasesEndingWithin } from "../licenses/machine-leases.js";
import type { LicenseView } from "../licenses/license-views.js";
import { browseLicenses } from "../licenses/list-licenses.js";
import { findProductBySlug } from "../products/products.js";
import { dayOf, type LicenseEvent, licenseEvents } from "../releases/usage-counts.js";
import { type UsageReport, usageReport } from "../releases/usage-report.js";
import { rolloutOf, rolloutPercent } from "../releases/rollout.js";

/** Days the overview's daily counts cover, today included. */
export const overviewDays = 30;

const day = 86_400_000;

/**
 * The overview's license buckets: a license's status, except that an ACTIVE license past its
 * expiry is EXPIRED (validate refuses it as expired; a suspended or revoked one keeps its status).
 */
export const overviewStatuses = ["ACTIVE", "EXPIRED", "SUSPENDED", "REVOKED"] as const;
export type OverviewStatus = (typeof overviewStatuses)[number];

/** A webhook endpoint whose last attempts failed, or that the service disabled. */
export interface FailingEndpoint {
  id: string;
  url: string;
  description: string | null;
  enabled: boolean;
  /** Why the service disabled it; null while enabled (or disabled by an admin). */
  disabledReason: string | null;
  consecutiveFailures: number;
  /** When the first of the failed attempts since the last success was, ISO 8601. */
  failingSince: string | null;
}

/** A version in a rollout not yet completed. */
export interface RolloutInProgress {
  product: string;
  version: string;
  channel: string;
  state: "rolling" | "paused";
  /** The share of machines the rollout reaches now, 0 to 100. */
  percent: number;
  startedAt: string;
}

/** What the overview shows, for one product or (product null) all of them. */
export interface Overview {
  product: string | null;
  /** The covered UTC days, oldest first. */
  days: string[];
  /** Per event, its count on each of `days`. */
  daily: Record<LicenseEvent, number[]>;
  /** Refused activations and validations over the days, by code, most first. */
  refusals: Array<{ event: LicenseEvent; code: string; count: number }>;
  byStatus: Array<{ status: OverviewStatus; count: number }>;
  expiringSoon: number;
  /** Active machines whose lease ends within 7 days (products with machineLeaseDays). */
  leasesEndingSoon: number;
  atLimit: { items: LicenseView[]; total: number };
  /** Endpoints hearing about the product (or any, for all products) that fail, most failures first. */
  failingEndpoints: FailingEndpoint[];
  /** The integrations with payment events ignored in the last 7 days, most first. */
  ignoredPaymentEvents: IgnoredPaymentEvents[];
  /** The product's (or every product's) versions in a rollout, by product, newest first. */
  rollouts: RolloutInProgress[];
  /** The product's usage: machines per app version, update checks; null for all products. */
  usage: UsageReport | null;
}

/**
 * The overview's numbers: the daily counters of the last days (a month of rows at most per
 * product and event), license counts by status, the licenses at their machine limit, the
 * failing webhook endpoints and the rollouts in progress.
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
    byStatus: await licensesByStatus(db, productId, now),
    expiringSoon: (
      await browseLicenses(db, { ...filter, expiringWithinDays: 30, limit: 1 }, order, now)
    ).total,
    leasesEndingSoon: await leasesEndingWithin(db, productId, now, 7 * day),
    atLimit: await browseLicenses(db, { ...filter, atLimit: true }, order, now),
    failingEndpoints: await failingEndpoints(db, product?.slug ?? null),
    ignoredPaymentEvents: await ignoredPaymentEvents(db, productId, now),
    rollouts: await rolloutsInProgress(db, productId, now),
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
 * The product's licenses (or all) by status, the statuses with any, an ACTIVE license past its
 * expiry counted as EXPIRED. A GROUP BY would walk all of them; instead the total and the expired
 * are counted from indexes (the expired: a range of the expiry's), the other statuses, few, from
 * their partial index, with how many of them are expired; ACTIVE is the rest.
 */
async function licensesByStatus(db: Kysely<DB>, productId: string | null, now: number) {
  let total = db
    .selectFrom("licenses")
    .select((eb) => eb.fn.countAll<number | string>().as("count"));
  let expired = db
    .selectFrom("licenses")
    .select((eb) => eb.fn.countAll<number | string>().as("count"))
    .where((eb) => expiredAt(eb, now));
  // Written as the partial index licenses_not_active_idx is (a literal, not a parameter), so
  // that both databases' planners use it.
  let others = db
    .selectFrom("licenses")
    .select((eb) => [
      "status",
      eb.fn.countAll<number | string>().as("count"),
      eb.fn
        .sum<number | string | null>(eb.case().when(expiredAt(eb, now)).then(1).else(0).end())
        .as("expired"),
    ])
    .where("status", "<>", sql.lit("ACTIVE" as const))
    .groupBy("status");
  if (productId !== null) {
    total = total.where("product_id", "=", productId);
    expired = expired.where("product_id", "=", productId);
    others = others.where("product_id", "=", productId);
  }
  const [all, past, rows] = await Promise.all([
    total.executeTakeFirst(),
    expired.executeTakeFirst(),
    others.execute(),
  ]);
  const counts = new Map<OverviewStatus, number>(
    rows.map((row) => [row.status, Number(row.count)]),
  );
  const notActive = rows.reduce((sum, row) => sum + Number(row.count), 0);
  const expiredNotActive = rows.reduce((sum, row) => sum + Number(row.expired ?? 0), 0);
  // The counts are read side by side, not in one snapshot: a license changed between them must
  // not make a bucket negative.
  const expiredActive = Math.max(0, Number(past?.count ?? 0) - expiredNotActive);
  counts.set("EXPIRED", expiredActive);
  counts.set("ACTIVE", Math.max(0, Number(all?.count ?? 0) - notActive - expiredActive));
  return overviewStatuses
    .map((status) => ({ status, count: counts.get(status) ?? 0 }))
    .filter((s) => s.count > 0);
}

/**
 * The webhook endpoints with failed attempts since their last success, or disabled by the
 * service, that hear about the product (every endpoint for all products). Endpoints are few;
 * the failing ones fewer.
 */
async function failingEndpoints(
  db: Kysely<DB>,
  productSlug: string | null,
): Promise<FailingEndpoint[]> {
  const rows = await db
    .selectFrom("webhook_endpoints")
    .select([
      "id",
      "url",
      "description",
      "enabled",
      "disabled_reason",
      "consecutive_failures",
      "failing_since",
      "products",
    ])
    .where((eb) =>
      eb.or([eb("consecutive_failures", ">", 0), eb("disabled_reason", "is not", null)]),
    )
    .orderBy("consecutive_failures", "desc")
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  return rows
    .filter(
      (row) =>
        productSlug === null ||
        row.products === null ||
        (JSON.parse(row.products) as string[]).includes(productSlug),
    )
    .map((row) => ({
      id: row.id,
      url: row.url,
      description: row.description,
      enabled: row.enabled === 1,
      disabledReason: row.disabled_reason,
      consecutiveFailures: row.consecutive_failures,
      failingSince: isoOrNull(row.failing_since === null ? null : Number(row.failing_since)),
    }));
}

/** The versions in a rollout (not yanked), by product, newest first, with their share now. */
async function rolloutsInProgress(
  db: Kysely<DB>,
  productId: string | null,
  now: number,
): Promise<RolloutInProgress[]> {
  let query = db
    .selectFrom("release_versions")
    .innerJoin("products", "products.id", "release_versions.product_id")
    .select([
      "products.slug",
      "release_versions.version",
      "release_versions.channel",
      "release_versions.rollout_started_at",
      "release_versions.rollout_percent",
      "release_versions.rollout_step_hours",
      "release_versions.rollout_paused_at",
    ])
    .where("release_versions.rollout_started_at", "is not", null)
    .where("release_versions.yanked_at", "is", null)
    .orderBy("products.slug")
    .orderBy("release_versions.sort_key", "desc");
  if (productId !== null) query = query.where("release_versions.product_id", "=", productId);
  const rows = await query.execute();
  return rows.flatMap((row) => {
    const rollout = rolloutOf(row);
    if (rollout === null) return [];
    return [
      {
        product: row.slug,
        version: row.version,
        channel: row.channel,
        state: rollout.pausedAt === null ? ("rolling" as const) : ("paused" as const),
        percent: rolloutPercent(rollout, now),
        startedAt: toIso(rollout.startedAt),
      },
    ];
  });
}
