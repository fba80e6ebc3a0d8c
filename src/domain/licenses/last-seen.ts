import { type Kysely, sql } from "kysely";
import type { DB } from "../../db/schema.js";

/**
 * A machine seen on a license at a time (epoch ms), with the app's version it reported (semver, at
 * most limits.appVersion long) or null.
 */
export type Sighting = [
  licenseId: string,
  machineId: string,
  seenAt: number,
  appVersion?: string | null,
];

/**
 * While writes keep failing (a full disk, an unreachable database), sightings would pile up here
 * without end: one per validate. Past this many machines waiting (50–70 MB with the longest
 * machine ids and app versions), the machines seen longest ago are dropped, and keep an older
 * last-seen until they validate again.
 */
export const maxPendingMachines = 100_000;

/**
 * Validate is the hottest path and its only write is last-seen, which no endpoint returns. It is
 * kept here, each machine's latest time once, and written in place by `flush`, which the app runs
 * every second and on shutdown, on both dialects: one short transaction per `batchSize` machines
 * (at real loads, one per flush), so that a busy second's flush never holds the database for
 * long. A crash of the process loses at most the last-seen times recorded since the previous
 * flush; nothing else is deferred.
 */
export class LastSeenBuffer {
  #pending = new Map<string, Sighting>();
  #flushed: Promise<void> = Promise.resolve();

  constructor(
    private readonly options: {
      /** The bound on waiting machines; maxPendingMachines by default. */
      maxPending?: number;
      /** Hears how many machines' sightings were dropped to stay under the bound. */
      onDropped?: (machines: number) => void;
    } = {},
  ) {}

  /**
   * The machine was seen at `at` on the license: its active activation's last-seen moves there,
   * and its app version to `appVersion` when one is given (the latest reported wins; none keeps
   * the stored one).
   */
  record(licenseId: string, machineId: string, at: number, appVersion: string | null = null): void {
    // NUL cannot occur in a machine id (refused at parsing) nor in a record id.
    const key = `${licenseId}\u0000${machineId}`;
    const previous = this.#pending.get(key);
    if (previous !== undefined) {
      if (at > previous[2]) previous[2] = at;
      if (appVersion !== null) previous[3] = appVersion;
      return;
    }
    this.#pending.set(key, [licenseId, machineId, at, appVersion]);
    if (this.#pending.size > (this.options.maxPending ?? maxPendingMachines)) this.#shed();
  }

  /** Drops the oldest half of the waiting machines (a Map iterates in insertion order). */
  #shed(): void {
    const drop = Math.ceil(this.#pending.size / 2);
    let dropped = 0;
    for (const key of this.#pending.keys()) {
      if (dropped++ >= drop) break;
      this.#pending.delete(key);
    }
    this.options.onDropped?.(drop);
  }

  /** Machines seen and not written yet. */
  get size(): number {
    return this.#pending.size;
  }

  /**
   * Writes what was recorded until now. Flushes run one after the other: a call made while one
   * runs writes, after it, what that one did not take.
   */
  flush(db: Kysely<DB>): Promise<void> {
    const run = this.#flushed.then(() => this.#write(db));
    this.#flushed = run.catch(() => {});
    return run;
  }

  async #write(db: Kysely<DB>): Promise<void> {
    const entries = this.#pending;
    this.#pending = new Map();
    // Sorted: neighbouring machines share index pages.
    const sightings = [...entries.values()].sort(bySightingKey);
    try {
      for (let i = 0; i < sightings.length; i += batchSize) {
        await lastSeenUpdate(sightings.slice(i, i + batchSize)).execute(db);
      }
    } catch (err) {
      // Put everything back for the next flush, ahead of what came meanwhile, newer times
      // winning, and a version reported meanwhile. Rewriting a time that did get written is
      // harmless: a time only moves forward.
      for (const [key, sighting] of this.#pending) {
        const older = entries.get(key);
        if (older === undefined) {
          entries.set(key, sighting);
          continue;
        }
        if (older[2] < sighting[2]) older[2] = sighting[2];
        if (sighting[3] != null) older[3] = sighting[3];
      }
      this.#pending = entries;
      if (entries.size > (this.options.maxPending ?? maxPendingMachines)) this.#shed();
      throw err;
    }
  }
}

export const batchSize = 512;

function bySightingKey(a: Sighting, b: Sighting): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
}

/**
 * One UPDATE for a batch, joined to it as a VALUES list (portable across SQLite and PostgreSQL;
 * both name its columns column1, column2...). Each machine's active activation is found through
 * the partial unique index, one search per machine: with the machine ids as plain parameters
 * SQLite loops over the list (test/licenses/last-seen.test.ts checks the plan); casting them, too, made
 * it scan the whole index instead. A time only moves forward, so a flush racing another
 * process's never sets an older one; the app version moves with it (also at an equal time: a
 * checkout right after activate in the same millisecond), and a sighting without one keeps the
 * stored one. The time's cast keeps PostgreSQL from typing it as text, the version's
 * from leaving a column of nulls untyped.
 */
export function lastSeenUpdate(batch: Sighting[]) {
  // Padded to a power of two with the last sighting again (an update it repeats changes nothing),
  // so that a flush uses one of ten statement texts, which the statement caches keep.
  const padded = [...batch];
  const last = batch[batch.length - 1];
  while (last && (padded.length & (padded.length - 1)) !== 0) padded.push(last);
  const rows = sql.join(
    padded.map(
      ([licenseId, machineId, at, appVersion]) =>
        sql`(${licenseId}, ${machineId}, cast(${at} as bigint), cast(${appVersion ?? null} as text))`,
    ),
  );
  return sql`update activations set last_seen_at = seen.column3,
      app_version = coalesce(seen.column4, activations.app_version)
    from (values ${rows}) as seen
    where activations.license_id = seen.column1 and activations.machine_id = seen.column2
      and activations.deactivated_at is null
      and (activations.last_seen_at < seen.column3
        or activations.last_seen_at = seen.column3 and seen.column4 is not null)`;
}
