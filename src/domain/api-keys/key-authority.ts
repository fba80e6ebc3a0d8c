import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { toIso } from "../../lib/time.js";
import type { Actor } from "../audit/audit-log.js";
import { findProductBySlug } from "../products/products.js";
import { parseProductIds, parseScopes } from "./api-keys.js";
import type { ApiKeyScope } from "../../contracts/vocabulary.js";

/**
 * What an API key may hand on or take away on the admin API: its own scopes, for its own
 * products, until its own expiry. A signed-in admin and the CLI are unrestricted, so they have
 * no KeyAuthority.
 */
export interface KeyAuthority {
  scopes: string[];
  /** Epoch ms, or null for a key that never expires. */
  expiresAt: number | null;
  /** Product ids, or null for a key that may act on every product. */
  productIds: string[] | null;
}

/** The authority an actor acts with: null (unrestricted) for an admin or the CLI. */
export async function keyAuthorityOf(db: Kysely<DB>, actor: Actor): Promise<KeyAuthority | null> {
  if (actor.type !== "api_key") return null;
  const key =
    actor.id === null
      ? undefined
      : await db
          .selectFrom("api_keys")
          .select(["scopes", "expires_at", "products"])
          .where("id", "=", actor.id)
          .where("revoked_at", "is", null)
          .executeTakeFirst();
  // A key that cannot be found holds nothing.
  return key
    ? {
        scopes: parseScopes(key.scopes),
        expiresAt: key.expires_at,
        productIds: parseProductIds(key.products),
      }
    : { scopes: [], expiresAt: 0, productIds: [] };
}

/**
 * Whether an actor holds `scope` beside the one its route asked for: a signed-in admin and the
 * CLI hold every scope; an API key its own (a key revoked or gone since, none).
 */
export async function actorHoldsScope(
  db: Kysely<DB>,
  actor: Actor,
  scope: ApiKeyScope,
): Promise<boolean> {
  const authority = await keyAuthorityOf(db, actor);
  return authority === null || authority.scopes.includes(scope);
}

/**
 * A key creates only keys with a subset of its scopes, expiring no later than itself, and, if
 * it is limited to products, limited to some of them.
 */
export function assertMayCreateKey(
  holder: KeyAuthority,
  wanted: {
    scopes: string[];
    expiresAt?: number | null;
    productIds?: string[] | null;
    /** The wanted products' slugs, in productIds' order, to name them. */
    productSlugs?: string[] | null;
  },
): void {
  const missing = scopesNotHeld(holder, wanted.scopes);
  if (missing.length > 0) {
    throw new ShipkeyError(
      "SCOPE_NOT_HELD",
      `This API key cannot grant scopes it does not hold: ${missing.join(", ")}`,
    );
  }
  const expiresAt = wanted.expiresAt ?? null;
  if (holder.expiresAt !== null && (expiresAt === null || expiresAt > holder.expiresAt)) {
    throw new ShipkeyError(
      "SCOPE_NOT_HELD",
      `This API key expires at ${toIso(holder.expiresAt)}; a key it creates needs an expiresAt no later than that`,
    );
  }
  if (holder.productIds === null) return;
  const productIds = wanted.productIds ?? null;
  if (productIds === null) {
    throw new ShipkeyError(
      "PRODUCT_NOT_IN_KEY",
      "This API key is limited to products; a key it creates must name products among them",
    );
  }
  const outside = productIds.findIndex((id) => !holder.productIds?.includes(id));
  if (outside >= 0) {
    const slug = wanted.productSlugs?.[outside] ?? productIds[outside];
    throw new ShipkeyError(
      "PRODUCT_NOT_IN_KEY",
      `This API key cannot grant product "${slug}": it is not among its products`,
    );
  }
}

/**
 * A key revokes only keys whose scopes it holds all of and, if it is limited to products, keys
 * limited to some of its products.
 */
export function assertMayRevokeKey(
  holder: KeyAuthority,
  target: { scopes: string[]; productIds: string[] | null },
): void {
  const missing = scopesNotHeld(holder, target.scopes);
  if (missing.length > 0) {
    throw new ShipkeyError(
      "SCOPE_NOT_HELD",
      `This API key cannot revoke a key with scopes it does not hold: ${missing.join(", ")}`,
    );
  }
  if (
    holder.productIds !== null &&
    (target.productIds === null || target.productIds.some((id) => !holder.productIds?.includes(id)))
  ) {
    throw new ShipkeyError(
      "PRODUCT_NOT_IN_KEY",
      "This API key cannot revoke a key for products that are not among its own",
    );
  }
}

/** What an admin request names: a product (by slug), a license (by key), or a new product. */
export type ProductTarget =
  { productSlug: string } | { licenseKey: string } | { newProduct: string };

/**
 * Refuses (403 PRODUCT_NOT_IN_KEY, naming the product) a key limited to products acting on
 * another product. `productIds` null: every product. A product or license that does not exist
 * passes, so the route answers its own 404. A limited key creates no product: a new product
 * cannot be among its products.
 */
export async function assertProductInKey(
  db: Kysely<DB>,
  productIds: readonly string[] | null | undefined,
  target: ProductTarget,
): Promise<void> {
  if (productIds === undefined || productIds === null) return;
  if ("newProduct" in target) {
    throw new ShipkeyError(
      "PRODUCT_NOT_IN_KEY",
      `This API key is limited to its products and cannot create product "${target.newProduct}"`,
    );
  }
  const product =
    "productSlug" in target
      ? await findProductBySlug(db, target.productSlug)
      : await db
          .selectFrom("licenses")
          .innerJoin("products", "products.id", "licenses.product_id")
          .select(["products.id", "products.slug"])
          .where("licenses.license_key", "=", target.licenseKey)
          .executeTakeFirst();
  if (product) assertKeyCovers(productIds, product);
}

/** The pure form of assertProductInKey, for a product already at hand (publish). */
export function assertKeyCovers(
  productIds: readonly string[] | null | undefined,
  product: { id: string; slug: string },
): void {
  if (productIds === undefined || productIds === null || productIds.includes(product.id)) return;
  throw new ShipkeyError(
    "PRODUCT_NOT_IN_KEY",
    `Product "${product.slug}" is not among this API key's products`,
  );
}

function scopesNotHeld(holder: KeyAuthority, scopes: string[]): string[] {
  return [...new Set(scopes)].filter((scope) => !holder.scopes.includes(scope));
}
