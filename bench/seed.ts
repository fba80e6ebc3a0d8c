import type { Insertable, Kysely } from "kysely";
import type { DB } from "../src/db/schema.js";
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

const batchSize = 1000;

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
  const now = Date.now();
  const maxMachines = maxMachinesFor(shape);
  const started = Date.now();
  for (let start = 0; start < shape.licenses; start += batchSize) {
    const end = Math.min(start + batchSize, shape.licenses);
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
      await trx.insertInto("licenses").values(licenses).execute();
      // Keep each statement under SQLite's bound-parameter limit.
      for (let k = 0; k < activations.length; k += batchSize) {
        await trx
          .insertInto("activations")
          .values(activations.slice(k, k + batchSize))
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
