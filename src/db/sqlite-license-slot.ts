import type BetterSqlite3 from "better-sqlite3";
import { type RawBuilder, sql } from "kysely";

/**
 * On SQLite each license row lives at the rowid its key hashes to, its slot, so that a license
 * endpoint finds a license by key in one B-tree (the table's, by rowid) instead of two (the key
 * index, then the table). At 1 000 000 licenses each of those trees is far larger than SQLite's
 * page cache, so each search reads a page from the file: the slot halves those reads on the
 * hottest path (profiled and measured, docs/performance-history.md, session 8).
 *
 * The slot is only ever a shortcut. Every read checks the key on the row it finds there and falls
 * back to the key index when the row is not in its slot: a slot taken by another key (a hash
 * collision), a row written by a tool that does not know about slots, or rowids renumbered. So
 * a wrong or missing slot costs speed, never a wrong answer. PostgreSQL has no rowid; its rows
 * stay where PostgreSQL puts them.
 */

/**
 * A 53-bit hash of the key (cyrb53: fast, well spread, and exact in a JavaScript number). Part of
 * the file format in the sense above: changing it would make existing rows miss their slots
 * (slower, still correct) until migrated again.
 */
export function licenseSlot(licenseKey: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < licenseKey.length; i++) {
    const ch = licenseKey.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/** The licenses table with its rowid, for inserts that place a row in its slot. */
export type LicensesWithRowid = { licenses: { rowid: number | null } };

/** The SQL function a SQLite connection of Shipkey's offers for licenseSlot (migrations use it). */
export const licenseSlotFunction = "shipkey_license_slot";

export function registerLicenseSlotFunction(sqlite: BetterSqlite3.Database): void {
  sqlite.function(licenseSlotFunction, { deterministic: true }, (licenseKey: unknown) =>
    typeof licenseKey === "string" ? licenseSlot(licenseKey) : null,
  );
}

/**
 * The rowid a new license row takes: its slot, or (slot taken by another key) none given, so
 * SQLite picks a free one and reads fall back to the key index. One statement, so no other
 * writer can take the slot in between.
 */
export function slotOrAnyRowid(licenseKey: string): RawBuilder<number | null> {
  const slot = licenseSlot(licenseKey);
  return sql<
    number | null
  >`(select case when exists (select 1 from licenses where rowid = ${slot}) then null else ${slot} end)`;
}
