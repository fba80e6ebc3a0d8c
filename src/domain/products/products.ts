import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { newId } from "../../lib/ids.js";
import { toIso } from "../../lib/time.js";
import { assertMaxLength, limits } from "../limits.js";

export interface Product {
  id: string;
  slug: string;
  name: string;
  createdAt: string;
}

// Slugs appear in URLs and CI configs: lowercase letters, digits and inner dashes.
const slugPattern = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

export async function createProduct(
  db: Kysely<DB>,
  input: { slug: string; name: string },
  now = Date.now(),
): Promise<Product> {
  assertMaxLength("slug", input.slug, limits.identifier);
  assertMaxLength("name", input.name, limits.name);
  if (!slugPattern.test(input.slug)) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      "slug must be lowercase letters, digits and dashes, starting and ending with a letter or digit",
    );
  }
  if (input.name.trim() === "") throw new ShipkeyError("INVALID_FIELD_VALUE", "name is required");
  const row = { id: newId("prod"), slug: input.slug, name: input.name, created_at: now };
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
  const row = await db
    .selectFrom("products")
    .selectAll()
    .where("slug", "=", slug)
    .executeTakeFirst();
  return row ? toProduct(row) : null;
}

function toProduct(row: DB["products"]): Product {
  return { id: row.id, slug: row.slug, name: row.name, createdAt: toIso(row.created_at) };
}
