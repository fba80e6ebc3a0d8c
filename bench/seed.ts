import { type Insertable, type Kysely, SqliteAdapter, sql } from "kysely";
import type { DB } from "../src/db/schema.js";
import { type LicensesWithRowid, licenseSlot } from "../src/db/sqlite-license-slot.js";
import { createApiKey } from "../src/domain/api-keys/api-keys.js";
import { createProduct } from "../src/domain/products/products.js";
import {
  benchProducts,
  type DatasetShape,
  licenseKeyFor,
  machineCountFor,
  machineIdFor,
  maxMachinesFor,
  productFor,
  recordIdFor,
} from "./dataset.js";

// Statements stay under SQLite's bound-parameter limit; transactions are larger, because rows in
// their slots land on random pages and each commit writes every page it dirtied.
const rowsPerStatement = 1000;
const licensesPerTransaction = 25_000;

/** Seeds products, licenses and active machines; returns an API key secret for publish. */
export async function seed(
  db: Kysely<DB>,
  shape: DatasetShape,
  log: (line: string) => void,
): Promise<string> {
  const productIds = new Map<string, string>();
  for (const slug of benchProducts) {
    const product = await createProduct(db, { slug, name: `Bench ${slug.slice(6)}` });
    productIds.set(slug, product.id);
  }
  const onSqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  const takenSlots = new Set<number>();
  // A second key with the same slot (a hash collision) gets a rowid SQLite picks.
  const freeSlot = (licenseKey: string): number | null => {
    const slot = licenseSlot(licenseKey);
    if (takenSlots.has(slot)) return null;
    takenSlots.add(slot);
    return slot;
  };
  // Rows in their slots land on random pages: a transaction of 25 000 of them dirties ~100 MB,
  // which this cache holds until commit (measured at 1 M: 250 s with 1 000 per transaction and
  // either cache, 168 s with 25 000 and this one; 25 000 with the default cache not measured).
  if (onSqlite) await sql`pragma cache_size = -262144`.execute(db);
  const now = Date.now();
  const maxMachines = maxMachinesFor(shape);
  const started = Date.now();
  for (let start = 0; start < shape.licenses; start += licensesPerTransaction) {
    const end = Math.min(start + licensesPerTransaction, shape.licenses);
    const licenses: Insertable<DB["licenses"]>[] = [];
    const activations: Insertable<DB["activations"]>[] = [];
    for (let i = start; i < end; i++) {
      const count = machineCountFor(i, shape);
      const licenseId = recordIdFor("lic", i);
      licenses.push({
        id: licenseId,
        license_key: licenseKeyFor(i),
        product_id: productIds.get(productFor(i)) as string,
        status: "ACTIVE",
        expires_at: i % 2 === 0 ? null : now + 365 * 24 * 3600 * 1000,
        edition: "pro",
        edition_name: "Professional",
        features: JSON.stringify(["sync", "export", "themes"]),
        max_machines: maxMachines,
        active_machines: count,
        created_at: now,
        updated_at: now,
        // What vendors keep on a license, so rows are as wide as real ones.
        customer_name: `Customer ${i} GmbH`,
        customer_email: `licensing+${i}@customer-${i % 997}.example.com`,
        note:
          i % 5 === 0
            ? `Renewed by purchase order PO-${i}; volume discount agreed with sales, see CRM.`
            : null,
      });
      for (let j = 0; j < count; j++) {
        activations.push({
          id: recordIdFor("act", i, j + 1),
          license_id: licenseId,
          machine_id: machineIdFor(i, j),
          machine_name: `Workstation ${j}`,
          platform: "Windows 11",
          activated_at: now,
          last_seen_at: now,
          deactivated_at: null,
        });
      }
    }
    await db.transaction().execute(async (trx) => {
      for (let k = 0; k < licenses.length; k += rowsPerStatement) {
        const rows = licenses.slice(k, k + rowsPerStatement);
        // As createLicense stores them: on SQLite each at its key's slot (sqlite-license-slot.ts).
        await trx
          .withTables<LicensesWithRowid>()
          .insertInto("licenses")
          .values(
            onSqlite ? rows.map((row) => ({ ...row, rowid: freeSlot(row.license_key) })) : rows,
          )
          .execute();
      }
      for (let k = 0; k < activations.length; k += rowsPerStatement) {
        await trx
          .insertInto("activations")
          .values(activations.slice(k, k + rowsPerStatement))
          .execute();
      }
    });
    if (end % 100_000 === 0 || end === shape.licenses) {
      log(`seeded ${end} licenses (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    }
  }
  const key = await createApiKey(db, { name: "bench", scopes: ["releases:write"] });
  return key.key;
}
