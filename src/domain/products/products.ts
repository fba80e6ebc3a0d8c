import { inTransaction } from "../../db/transaction.js";
import { compileOnce } from "../../db/compiled-query.js";
import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { newId } from "../../lib/ids.js";
import { toIso } from "../../lib/time.js";
import { assertMaxLength, assertSingleLine, limits } from "../limits.js";

export interface Product {
  id: string;
  slug: string;
  name: string;
  /** How long a license certificate lasts, in seconds (docs/decisions.md). */
  offlinePeriodSeconds: number;
  createdAt: string;
}

/** A certificate's lifetime: 7 days unless the product says otherwise, never more than 90. */
export const offlinePeriod = {
  defaultSeconds: 7 * 86_400,
  minSeconds: 60,
  maxSeconds: 90 * 86_400,
};

// Slugs appear in URLs and CI configs: lowercase letters, digits and inner dashes.
const slugPattern = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

export async function createProduct(
  db: Kysely<DB>,
  input: { slug: string; name: string },
  now = Date.now(),
): Promise<Product> {
  assertMaxLength("slug", input.slug, limits.identifier);
  assertMaxLength("name", input.name, limits.name);
  assertSingleLine("name", input.name);
  if (!slugPattern.test(input.slug)) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      "slug must be lowercase letters, digits and dashes, starting and ending with a letter or digit",
    );
  }
  if (input.name.trim() === "") throw new ShipkeyError("INVALID_FIELD_VALUE", "name is required");
  const row = {
    id: newId("prod"),
    slug: input.slug,
    name: input.name,
    created_at: now,
    offline_period_seconds: offlinePeriod.defaultSeconds,
  };
  const inserted = await db
    .insertInto("products")
    .values(row)
    .onConflict((oc) => oc.column("slug").doNothing())
    .returning("id")
    .executeTakeFirst();
  if (!inserted) {
    throw new ShipkeyError("PRODUCT_SLUG_TAKEN", `A product with slug "${input.slug}" exists`);
  }
  return toProduct(row);
}

export async function listProducts(db: Kysely<DB>): Promise<Product[]> {
  const rows = await db.selectFrom("products").selectAll().orderBy("slug").execute();
  return rows.map(toProduct);
}

export async function findProductBySlug(db: Kysely<DB>, slug: string): Promise<Product | null> {
  if (slug.length > limits.identifier) return null;
  const [row] = (await findProductRow(db, { slug })).rows;
  return row ? toProduct(row) : null;
}

// Columns listed, not `*`: on PostgreSQL this is a named prepared statement, and one whose result
// shape changes under it (a column added by a newer process) fails instead of adapting.
const findProductRow = compileOnce<{ slug: string }, DB["products"]>(["slug"], (db, p) =>
  db
    .selectFrom("products")
    .select(["id", "slug", "name", "created_at", "offline_period_seconds"])
    .where("slug", "=", p.slug),
);

function toProduct(row: DB["products"]): Product {
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    offlinePeriodSeconds: row.offline_period_seconds,
    createdAt: toIso(row.created_at),
  };
}

export async function requireProduct(db: Kysely<DB>, slug: string): Promise<Product> {
  const product = await findProductBySlug(db, slug);
  if (!product) throw ShipkeyError.spec("PRODUCT_NOT_FOUND");
  return product;
}

export async function renameProduct(db: Kysely<DB>, slug: string, name: string): Promise<Product> {
  assertMaxLength("name", name, limits.name);
  assertSingleLine("name", name);
  if (name.trim() === "") throw new ShipkeyError("INVALID_FIELD_VALUE", "name is required");
  const result = await db
    .updateTable("products")
    .set({ name })
    .where("slug", "=", slug)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw ShipkeyError.spec("PRODUCT_NOT_FOUND");
  return requireProduct(db, slug);
}

/** Sets how long the product's license certificates last (60 s to 90 days). */
export async function setOfflinePeriod(
  db: Kysely<DB>,
  slug: string,
  seconds: number,
): Promise<Product> {
  if (
    !Number.isSafeInteger(seconds) ||
    seconds < offlinePeriod.minSeconds ||
    seconds > offlinePeriod.maxSeconds
  ) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `offlinePeriodSeconds must be a whole number from ${offlinePeriod.minSeconds} to ${offlinePeriod.maxSeconds} (90 days)`,
    );
  }
  const result = await db
    .updateTable("products")
    .set({ offline_period_seconds: seconds })
    .where("slug", "=", slug)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw ShipkeyError.spec("PRODUCT_NOT_FOUND");
  return requireProduct(db, slug);
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
