import { Readable } from "node:stream";
import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import type { LicenseView } from "./license-views.js";
import { type LicenseFilter, listLicenses } from "./list-licenses.js";

/** Rows read from the database per query while exporting. */
const batch = 500;

const columns: Array<[string, (l: LicenseView) => string | number | null]> = [
  ["licenseKey", (l) => l.licenseKey],
  ["product", (l) => l.product],
  ["status", (l) => l.status],
  ["activeMachines", (l) => l.activeMachines],
  ["maxMachines", (l) => l.maxMachines],
  ["edition", (l) => l.edition],
  ["features", (l) => l.features.join(" ")],
  ["customerName", (l) => l.customerName],
  ["customerEmail", (l) => l.customerEmail],
  ["externalId", (l) => l.externalId],
  ["note", (l) => l.note],
  ["createdAt", (l) => l.createdAt],
  ["expiresAt", (l) => l.expiresAt],
];

/**
 * One CSV cell: quoted when it holds a quote, comma or line break; text a spreadsheet would read
 * as a formula (=, +, -, @, tab, carriage return first) is prefixed with an apostrophe.
 */
export function csvCell(value: string | number | null): string {
  if (value === null) return "";
  if (typeof value === "number") return String(value);
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

function csvLine(cells: Array<string | number | null>): string {
  return `${cells.map(csvCell).join(",")}\r\n`;
}

/** The licenses a filter matches, newest first, as CSV lines read a batch at a time. */
async function* csvLines(db: Kysely<DB>, filter: LicenseFilter): AsyncGenerator<string> {
  yield csvLine(columns.map(([name]) => name));
  let cursor: string | undefined;
  do {
    const page = await listLicenses(db, { ...filter, limit: batch, cursor });
    yield page.items.map((l) => csvLine(columns.map(([, cell]) => cell(l)))).join("");
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
}

/** A stream of the export: it holds one batch of licenses at a time, however many match. */
export function licensesCsv(db: Kysely<DB>, filter: LicenseFilter): Readable {
  return Readable.from(csvLines(db, filter));
}
