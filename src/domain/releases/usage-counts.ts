import type { Kysely } from "kysely";
import type { DB, DownloadCountsTable, UpdateChecksTable } from "../../db/schema.js";
import { inTransaction } from "../../db/transaction.js";
import { type Channel, type Platform } from "../../contracts/vocabulary.js";

/**
 * Distinct counters waiting for a flush, at most. Update checks carry the client's version, so a
 * hostile client could make a new counter per request; past this bound new counters are dropped
 * until the next flush (existing ones still count).
 */
export const maxPendingCounters = 10_000;

/** The UTC day of an instant, as the count tables key it: YYYY-MM-DD. */
export function dayOf(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

/** What the license endpoints count per product and day (daily_counts.event). */
export const licenseEvents = [
  "activation",
  "activation_refused",
  "deactivation",
  "validation",
  "validation_refused",
] as const;
export type LicenseEvent = (typeof licenseEvents)[number];

/** A license endpoint's event, keyed by the product's slug until the flush finds its id. */
interface EventCount {
  productSlug: string;
  day: string;
  event: LicenseEvent;
  code: string;
  count: number;
}

/** A counter is the row it adds to (count included), kept under its primary key. */
type DownloadCount = DownloadCountsTable;
type CheckCount = UpdateChecksTable;

const downloadKey = (row: DownloadCount) =>
  `${row.version_id}\u0000${row.platform}\u0000${row.day}`;
const eventKey = (row: EventCount) =>
  [row.productSlug, row.day, row.event, row.code].join("\u0000");
const checkKey = (row: CheckCount) =>
  [row.product_id, row.day, row.current_version, row.platform, row.channel].join("\u0000");

/**
 * Download and update-check counts, kept in memory and added to the count tables by `flush`,
 * which the app runs every second with last-seen and on shutdown: one short transaction, never a
 * write per request. A crash loses at most the last second of counts.
 */
export class UsageCounts {
  #downloads = new Map<string, DownloadCount>();
  #checks = new Map<string, CheckCount>();
  #events = new Map<string, EventCount>();
  #flushed: Promise<void> = Promise.resolve();

  constructor(private readonly onDropped: () => void = () => {}) {}

  /** A download of a version's platform build through the redirect. */
  countDownload(versionId: string, platform: Platform, at: number): void {
    const row = { version_id: versionId, platform, day: dayOf(at), count: 1 };
    this.#add(this.#downloads, downloadKey(row), row);
  }

  /**
   * A feed request. `currentVersion` is the client's (normalised) version or "" when the feed
   * does not carry one; at flush, a version the product never published counts as "".
   */
  countCheck(
    productId: string,
    currentVersion: string,
    platform: Platform,
    channel: Channel,
    at: number,
  ): void {
    const row = {
      product_id: productId,
      day: dayOf(at),
      current_version: currentVersion,
      platform,
      channel,
      count: 1,
    };
    this.#add(this.#checks, checkKey(row), row);
  }

  /**
   * A license endpoint's answer for a product (by the slug the request named): an event, with the
   * refusal's code for a refused one. At flush, a slug no product has is dropped.
   */
  countEvent(productSlug: string, event: LicenseEvent, at: number, code = ""): void {
    const row = { productSlug, day: dayOf(at), event, code, count: 1 };
    this.#add(this.#events, eventKey(row), row);
  }

  #add<T extends DownloadCount | CheckCount | EventCount>(
    counters: Map<string, T>,
    key: string,
    row: T,
  ): void {
    const counter = counters.get(key);
    if (counter !== undefined) {
      counter.count += row.count;
    } else if (this.size < maxPendingCounters) {
      counters.set(key, { ...row });
    } else {
      this.onDropped();
    }
  }

  /** Counters waiting for a flush. */
  get size(): number {
    return this.#downloads.size + this.#checks.size + this.#events.size;
  }

  /**
   * Adds what was counted until now to the tables. Flushes run one after the other: a call made
   * while one runs writes, after it, what that one did not take.
   */
  flush(db: Kysely<DB>): Promise<void> {
    const run = this.#flushed.then(() => this.#write(db));
    this.#flushed = run.catch(() => {});
    return run;
  }

  async #write(db: Kysely<DB>): Promise<void> {
    const downloads = this.#downloads;
    const checks = this.#checks;
    const events = this.#events;
    if (downloads.size === 0 && checks.size === 0 && events.size === 0) return;
    this.#downloads = new Map();
    this.#checks = new Map();
    this.#events = new Map();
    try {
      await inTransaction(db, async (trx) => {
        for (const row of downloads.values()) {
          await trx
            .insertInto("download_counts")
            .values(row)
            .onConflict((oc) =>
              oc
                .columns(["version_id", "platform", "day"])
                .doUpdateSet((eb) => ({ count: eb("download_counts.count", "+", row.count) })),
            )
            .execute();
        }
        const published = await publishedVersions(trx, [...checks.values()]);
        for (const row of folded(checks.values(), published)) {
          await trx
            .insertInto("update_checks")
            .values(row)
            .onConflict((oc) =>
              oc
                .columns(["product_id", "day", "current_version", "platform", "channel"])
                .doUpdateSet((eb) => ({ count: eb("update_checks.count", "+", row.count) })),
            )
            .execute();
        }
        await addEvents(trx, [...events.values()]);
      });
    } catch (err) {
      // Back for the next flush, added to what came meanwhile.
      for (const [key, row] of downloads) this.#add(this.#downloads, key, row);
      for (const [key, row] of checks) this.#add(this.#checks, key, row);
      for (const [key, row] of events) this.#add(this.#events, key, row);
      throw err;
    }
  }
}

/** Which of the counted (product, version) pairs the product has published (yanked too). */
async function publishedVersions(db: Kysely<DB>, checks: CheckCount[]): Promise<Set<string>> {
  const versions = [...new Set(checks.map((c) => c.current_version))].filter((v) => v !== "");
  if (versions.length === 0) return new Set();
  const rows = await db
    .selectFrom("release_versions")
    .select(["product_id", "version"])
    .where("product_id", "in", [...new Set(checks.map((c) => c.product_id))])
    .where("version", "in", versions)
    .execute();
  return new Set(rows.map((row) => `${row.product_id}\u0000${row.version}`));
}

/** The check counters with versions the product never published folded into "" (unknown). */
function folded(checks: Iterable<CheckCount>, published: Set<string>): CheckCount[] {
  const out = new Map<string, CheckCount>();
  for (const check of checks) {
    const known =
      check.current_version !== "" &&
      published.has(`${check.product_id}\u0000${check.current_version}`);
    const row = { ...check, current_version: known ? check.current_version : "" };
    const key = checkKey(row);
    const counter = out.get(key);
    if (counter) counter.count += row.count;
    else out.set(key, row);
  }
  return [...out.values()];
}

/**
 * Counts `count` of a license event now, in the caller's transaction: the admin's deactivations
 * (the dashboard, the CLI, the admin API), which no license endpoint's answer counts.
 */
export async function countLicenseEvent(
  trx: Kysely<DB>,
  productSlug: string,
  event: LicenseEvent,
  count: number,
  now = Date.now(),
): Promise<void> {
  if (count > 0) await addEvents(trx, [{ productSlug, day: dayOf(now), event, code: "", count }]);
}

/** Adds the event counters of products that exist to daily_counts. */
async function addEvents(db: Kysely<DB>, events: EventCount[]): Promise<void> {
  if (events.length === 0) return;
  const products = await db
    .selectFrom("products")
    .select(["id", "slug"])
    .where("slug", "in", [...new Set(events.map((e) => e.productSlug))])
    .execute();
  const idOf = new Map(products.map((p) => [p.slug, p.id]));
  for (const { productSlug, count, ...key } of events) {
    const productId = idOf.get(productSlug);
    if (productId === undefined) continue;
    await db
      .insertInto("daily_counts")
      .values({ ...key, product_id: productId, count })
      .onConflict((oc) =>
        oc
          .columns(["day", "product_id", "event", "code"])
          .doUpdateSet((eb) => ({ count: eb("daily_counts.count", "+", count) })),
      )
      .execute();
  }
}
