import type { Kysely } from "kysely";
import type { Channel, DB, Platform } from "../../db/schema.js";
import { inTransaction } from "../../db/transaction.js";

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

/**
 * Download and update-check counts, kept in memory and added to the count tables by `flush`,
 * which the app runs every second with last-seen and on shutdown: one short transaction, never a
 * write per request. A crash loses at most the last second of counts.
 */
export class UsageCounts {
  #downloads = new Map<string, number>();
  #checks = new Map<string, number>();
  #flushing: Promise<void> | null = null;

  constructor(private readonly onDropped: () => void = () => {}) {}

  /** A download of a version's platform build through the redirect. */
  countDownload(versionId: string, platform: Platform, at: number): void {
    this.#add(this.#downloads, [versionId, platform, dayOf(at)].join("\u0000"), 1);
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
    const key = [productId, dayOf(at), currentVersion, platform, channel].join("\u0000");
    this.#add(this.#checks, key, 1);
  }

  #add(counters: Map<string, number>, key: string, n: number): void {
    const count = counters.get(key);
    if (count !== undefined) {
      counters.set(key, count + n);
    } else if (this.#downloads.size + this.#checks.size < maxPendingCounters) {
      counters.set(key, n);
    } else {
      this.onDropped();
    }
  }

  /** Counters waiting for a flush. */
  get size(): number {
    return this.#downloads.size + this.#checks.size;
  }

  /** Adds what was counted until now to the tables; concurrent calls share one flush. */
  flush(db: Kysely<DB>): Promise<void> {
    this.#flushing ??= this.#write(db).finally(() => {
      this.#flushing = null;
    });
    return this.#flushing;
  }

  async #write(db: Kysely<DB>): Promise<void> {
    const downloads = this.#downloads;
    const checks = this.#checks;
    if (downloads.size === 0 && checks.size === 0) return;
    this.#downloads = new Map();
    this.#checks = new Map();
    try {
      await inTransaction(db, async (trx) => {
        for (const [key, n] of downloads) {
          const [versionId = "", platform = "", day = ""] = key.split("\u0000");
          await trx
            .insertInto("download_counts")
            .values({ version_id: versionId, platform: platform as Platform, day, count: n })
            .onConflict((oc) =>
              oc
                .columns(["version_id", "platform", "day"])
                .doUpdateSet((eb) => ({ count: eb("download_counts.count", "+", n) })),
            )
            .execute();
        }
        const published = await publishedVersions(trx, checks);
        for (const [key, n] of merged(checks, published)) {
          const [productId = "", day = "", version = "", platform = "", channel = ""] =
            key.split("\u0000");
          await trx
            .insertInto("update_checks")
            .values({
              product_id: productId,
              day,
              current_version: version,
              platform: platform as Platform,
              channel: channel as Channel,
              count: n,
            })
            .onConflict((oc) =>
              oc
                .columns(["product_id", "day", "current_version", "platform", "channel"])
                .doUpdateSet((eb) => ({ count: eb("update_checks.count", "+", n) })),
            )
            .execute();
        }
      });
    } catch (err) {
      // Back for the next flush, added to what came meanwhile.
      for (const [key, n] of downloads) this.#add(this.#downloads, key, n);
      for (const [key, n] of checks) this.#add(this.#checks, key, n);
      throw err;
    }
  }
}

/** Which of the counted (product, version) pairs the product has published (yanked too). */
async function publishedVersions(
  db: Kysely<DB>,
  checks: Map<string, number>,
): Promise<Set<string>> {
  const keys = [...checks.keys()].map((key) => key.split("\u0000"));
  const productIds = [...new Set(keys.map(([productId = ""]) => productId))];
  const versions = [...new Set(keys.map(([, , version = ""]) => version))].filter((v) => v !== "");
  if (versions.length === 0) return new Set();
  const rows = await db
    .selectFrom("release_versions")
    .select(["product_id", "version"])
    .where("product_id", "in", productIds)
    .where("version", "in", versions)
    .execute();
  return new Set(rows.map((row) => `${row.product_id}\u0000${row.version}`));
}

/** Check counters with unpublished versions folded into "" (unknown). */
function merged(checks: Map<string, number>, published: Set<string>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [key, n] of checks) {
    const [productId = "", day = "", version = "", platform = "", channel = ""] =
      key.split("\u0000");
    const known = version !== "" && published.has(`${productId}\u0000${version}`);
    const folded = [productId, day, known ? version : "", platform, channel].join("\u0000");
    out.set(folded, (out.get(folded) ?? 0) + n);
  }
  return out;
}
