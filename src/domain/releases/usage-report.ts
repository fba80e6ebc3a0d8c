import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { requireProduct } from "../products/products.js";
import { newestFirst } from "./update-feed.js";
import { dayOf } from "./usage-counts.js";
import type { UsageReport as UsageReportAnswer } from "../../contracts/release-versions.js";
import { usageReportDays } from "../../contracts/vocabulary.js";

export type UsageReport = UsageReportAnswer;

/** What the counts say about a product over the last `days` UTC days, today included. */
export async function usageReport(
  db: Kysely<DB>,
  slug: string,
  days: number,
  now = Date.now(),
): Promise<UsageReport> {
  if (!Number.isSafeInteger(days) || days < 1 || days > usageReportDays.max) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `days must be an integer from 1 to ${usageReportDays.max}`,
      { field: "days" },
    );
  }
  const product = await requireProduct(db, slug);
  const since = dayOf(now - (days - 1) * 86_400_000);
  const downloads = await db
    .selectFrom("download_counts as d")
    .innerJoin("release_versions as v", "v.id", "d.version_id")
    .select(["v.version", "d.platform", (eb) => eb.fn.sum<number>("d.count").as("count")])
    .where("v.product_id", "=", product.id)
    .where("d.day", ">=", since)
    .groupBy(["v.version", "d.platform"])
    .execute();
  const checks = await db
    .selectFrom("update_checks")
    .select([
      "current_version",
      "platform",
      "channel",
      (eb) => eb.fn.sum<number>("count").as("count"),
    ])
    .where("product_id", "=", product.id)
    .where("day", ">=", since)
    .groupBy(["current_version", "platform", "channel"])
    .execute();
  return {
    product: product.slug,
    since,
    downloads: downloads
      .map((row) => ({ version: row.version, platform: row.platform, count: Number(row.count) }))
      .sort((a, b) => newestFirst(a.version, b.version) || a.platform.localeCompare(b.platform)),
    updateChecks: checks
      .map((row) => ({
        currentVersion: row.current_version === "" ? null : row.current_version,
        platform: row.platform,
        channel: row.channel,
        count: Number(row.count),
      }))
      .sort((a, b) => b.count - a.count || byVersion(a.currentVersion, b.currentVersion)),
    machinesByVersion: await machinesByVersion(db, product.id),
  };
}

/**
 * The product's active machines (activations holding a slot) per the app version they last
 * reported, most machines first; version null: none reported (an app without the SDK, or an
 * older SDK). One grouped read of the product's licenses' activations.
 */
export async function machinesByVersion(
  db: Kysely<DB>,
  productId: string,
): Promise<UsageReport["machinesByVersion"]> {
  const rows = await db
    .selectFrom("activations as a")
    .innerJoin("licenses as l", "l.id", "a.license_id")
    .select(["a.app_version", (eb) => eb.fn.countAll<number | string>().as("machines")])
    .where("l.product_id", "=", productId)
    .where("a.deactivated_at", "is", null)
    .groupBy("a.app_version")
    .execute();
  return rows
    .map((row) => ({ version: row.app_version, machines: Number(row.machines) }))
    .sort((a, b) => b.machines - a.machines || byVersion(a.version, b.version));
}

function byVersion(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return newestFirst(a, b);
}
