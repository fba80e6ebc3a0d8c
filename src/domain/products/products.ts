import { inTransaction } from "../../db/transaction.js";
import { compileOnce } from "../../db/compiled-query.js";
import type { Kysely, Selectable, Updateable } from "kysely";
import type { DB } from "../../db/schema.js";
import { errorsOf, ShipkeyError, throwFirst } from "../../errors.js";
import { newId } from "../../lib/ids.js";
import { toIso } from "../../lib/time.js";
import { assertMaxLength, assertSingleLine } from "../limits.js";
import { settingErrors } from "../settings.js";
import { checkTauriPublicKey, readTauriPublicKey } from "./tauri-public-key.js";
import { productSettings, type ProductSettingValues } from "../../contracts/product-settings.js";
import { limits, offlineAllowanceRange, offlinePeriod } from "../../contracts/vocabulary.js";
import type { Product as ProductView } from "../../contracts/products.js";

export type Product = ProductView;

type ProductRow = Selectable<DB["products"]>;

/** Throws the refusal of a value of one of the product's settings (product-settings.ts), if any. */
function assertProductSetting(values: ProductSettingValues): void {
  throwFirst(settingErrors(productSettings, values));
}

// Slugs appear in URLs and CI configs: lowercase letters, digits and inner dashes.
const slugPattern = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

/** Every refusal of a new product's slug and name, in the order createProduct reports them. */
export function newProductErrors(input: { slug: string; name: string }): ShipkeyError[] {
  return errorsOf([
    () => assertMaxLength("slug", input.slug, limits.identifier),
    () => assertMaxLength("name", input.name, limits.name),
    () => assertSingleLine("name", input.name),
    () => {
      if (!slugPattern.test(input.slug)) {
        throw new ShipkeyError(
          "INVALID_FIELD_VALUE",
          "slug must be lowercase letters, digits and dashes, starting and ending with a letter or digit",
          { field: "slug" },
        );
      }
    },
    () => {
      if (input.name.trim() === "") {
        throw new ShipkeyError("INVALID_FIELD_VALUE", "name is required", { field: "name" });
      }
    },
  ]);
}

export async function createProduct(
  db: Kysely<DB>,
  input: { slug: string; name: string },
  now = Date.now(),
): Promise<Product> {
  throwFirst(newProductErrors(input));
  const row: ProductRow = {
    id: newId("prod"),
    slug: input.slug,
    name: input.name,
    created_at: now,
    updates_require_license: 0,
    download_redirects: 0,
    tauri_public_key: null,
    offline_period_seconds: offlinePeriod.defaultSeconds,
    offline_allowance: offlineAllowanceRange.default,
    max_deactivations_per_30_days: null,
    machine_lease_days: null,
  };
  const inserted = await db
    .insertInto("products")
    .values(row)
    .onConflict((oc) => oc.column("slug").doNothing())
    .returning("id")
    .executeTakeFirst();
  if (!inserted) {
    throw new ShipkeyError("PRODUCT_SLUG_TAKEN", `A product with slug "${input.slug}" exists`, {
      field: "slug",
    });
  }
  return toProduct(row);
}

/** Every product by slug; given `productIds` (a limited API key's), only those. */
export async function listProducts(
  db: Kysely<DB>,
  productIds: readonly string[] | null = null,
): Promise<Product[]> {
  let query = db.selectFrom("products").selectAll().orderBy("slug");
  if (productIds !== null) query = query.where("id", "in", [...productIds, ""]);
  const rows = await query.execute();
  return rows.map(toProduct);
}

export async function findProductBySlug(db: Kysely<DB>, slug: string): Promise<Product | null> {
  if (slug.length > limits.identifier) return null;
  const [row] = (await findProductRow(db, { slug })).rows;
  return row ? toProduct(row) : null;
}

// Columns listed, not `*`: on PostgreSQL this is a named prepared statement, and one whose result
// shape changes under it (a column added by a newer process) fails instead of adapting.
const findProductRow = compileOnce<{ slug: string }, ProductRow>(["slug"], (db, p) =>
  db
    .selectFrom("products")
    .select([
      "id",
      "slug",
      "name",
      "created_at",
      "updates_require_license",
      "download_redirects",
      "tauri_public_key",
      "offline_period_seconds",
      "offline_allowance",
      "max_deactivations_per_30_days",
      "machine_lease_days",
    ])
    .where("slug", "=", p.slug),
);

function toProduct(row: ProductRow): Product {
  const key = row.tauri_public_key;
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    createdAt: toIso(row.created_at),
    updatesRequireLicense: row.updates_require_license === 1,
    downloadRedirects: row.download_redirects === 1,
    tauriPublicKey: key,
    tauriKeyId: key === null ? null : (readTauriPublicKey(key)?.keyId ?? null),
    offlinePeriodSeconds: row.offline_period_seconds,
    offlineAllowance: row.offline_allowance,
    maxDeactivationsPer30Days: row.max_deactivations_per_30_days,
    machineLeaseDays: row.machine_lease_days,
  };
}

export async function requireProduct(db: Kysely<DB>, slug: string): Promise<Product> {
  const product = await findProductBySlug(db, slug);
  if (!product) throw ShipkeyError.spec("PRODUCT_NOT_FOUND");
  return product;
}

/** Writes the changes to the product's row and reads it back; 404 when there is no such product. */
async function updateProductRow(
  db: Kysely<DB>,
  slug: string,
  changes: Updateable<DB["products"]>,
): Promise<Product> {
  const result = await db
    .updateTable("products")
    .set(changes)
    .where("slug", "=", slug)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw ShipkeyError.spec("PRODUCT_NOT_FOUND");
  return requireProduct(db, slug);
}

export async function renameProduct(db: Kysely<DB>, slug: string, name: string): Promise<Product> {
  assertMaxLength("name", name, limits.name);
  assertSingleLine("name", name);
  if (name.trim() === "") {
    throw new ShipkeyError("INVALID_FIELD_VALUE", "name is required", { field: "name" });
  }
  return updateProductRow(db, slug, { name });
}

/** How a product's updates are delivered (docs/update-feeds.md: licensed updates, downloads). */
export interface UpdateDelivery {
  updatesRequireLicense?: boolean;
  downloadRedirects?: boolean;
}

export async function setUpdateDelivery(
  db: Kysely<DB>,
  slug: string,
  settings: UpdateDelivery,
): Promise<Product> {
  const flag = (on: boolean | undefined) => (on === undefined ? undefined : on ? 1 : 0);
  const changes = {
    updates_require_license: flag(settings.updatesRequireLicense),
    download_redirects: flag(settings.downloadRedirects),
  };
  return updateProductRow(db, slug, changes);
}

/**
 * Sets the product's Tauri public key (checked first: 400 naming tauriPublicKey), or clears it
 * with null. While set, publish refuses signatures not made by it.
 */
export async function setTauriPublicKey(
  db: Kysely<DB>,
  slug: string,
  tauriPublicKey: string | null,
): Promise<Product> {
  const stored = tauriPublicKey === null ? null : checkTauriPublicKey(tauriPublicKey).stored;
  return updateProductRow(db, slug, { tauri_public_key: stored });
}

/** Sets how long the product's license certificates last. */
export async function setOfflinePeriod(
  db: Kysely<DB>,
  slug: string,
  seconds: number,
): Promise<Product> {
  assertProductSetting({ offlinePeriodSeconds: seconds });
  return updateProductRow(db, slug, { offline_period_seconds: seconds });
}

/** Sets how many machines beyond maxMachines may hold an unexpired certificate. */
export async function setOfflineAllowance(
  db: Kysely<DB>,
  slug: string,
  machines: number,
): Promise<Product> {
  assertProductSetting({ offlineAllowance: machines });
  return updateProductRow(db, slug, { offline_allowance: machines });
}

/**
 * Sets the product's churn limit: public deactivations allowed per license in the trailing 30
 * days (null: no limit). A license's own limit, when set, overrides it.
 */
export async function setDeactivationLimit(
  db: Kysely<DB>,
  slug: string,
  perThirtyDays: number | null,
): Promise<Product> {
  assertProductSetting({ maxDeactivationsPer30Days: perThirtyDays });
  return updateProductRow(db, slug, { max_deactivations_per_30_days: perThirtyDays });
}

/**
 * Sets the product's machine lease: a machine not seen for that many days loses its slot
 * (domain/licenses/machine-leases.ts); null: machines keep their slots until deactivated.
 */
export async function setMachineLease(
  db: Kysely<DB>,
  slug: string,
  days: number | null,
): Promise<Product> {
  assertProductSetting({ machineLeaseDays: days });
  return updateProductRow(db, slug, { machine_lease_days: days });
}

/** Refused with 409 PRODUCT_IN_USE while licenses or releases reference the product. */
export async function deleteProduct(db: Kysely<DB>, slug: string): Promise<void> {
  const product = await requireProduct(db, slug);
  await inTransaction(db, async (trx) => {
    const license = await trx
      .selectFrom("licenses")
      .select("id")
      .where("product_id", "=", product.id)
      .limit(1)
      .executeTakeFirst();
    const release = await trx
      .selectFrom("release_versions")
      .select("id")
      .where("product_id", "=", product.id)
      .limit(1)
      .executeTakeFirst();
    if (license || release) {
      throw new ShipkeyError(
        "PRODUCT_IN_USE",
        `Product "${slug}" still has ${license ? "licenses" : "releases"}; delete or move them first`,
      );
    }
    await trx.deleteFrom("products").where("id", "=", product.id).execute();
  });
}
