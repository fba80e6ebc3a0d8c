import { type Kysely, sql } from "kysely";
import { foldedForLike } from "../../db/case-folding.js";
import type { DB } from "../../db/schema.js";
import { decodeCursor, encodeCursor, type Page } from "../pagination.js";
import { expiredAt, expiringBetween, unexpiredAt } from "./license-record.js";
import { type LicenseView, selectLicenseViews, toLicenseView } from "./license-views.js";
import type { LicenseStatus } from "../../contracts/vocabulary.js";

// Lists of licenses: a filter, a page by cursor (the admin API, the CLI, the CSV export) or by
// number in a chosen order (the dashboard).

export interface LicenseFilter {
  product?: string;
  status?: LicenseStatus;
  /** true: only expired; false: only unexpired (or never expiring). */
  expired?: boolean;
  /** Key prefix, or part of the customer's name or email, the external id or the note. */
  q?: string;
  externalId?: string;
  /** Only licenses whose machines fill every slot. */
  atLimit?: boolean;
  /** Only unexpired licenses that expire within this many days. */
  expiringWithinDays?: number;
  /** Only licenses on which this machine is active. */
  machineId?: string;
  /** A limited API key's products (ids): only their licenses. */
  productIds?: readonly string[] | null;
  limit: number;
  cursor?: string;
}

/** The orders a list of licenses can be sorted in. */
export const licenseSorts = ["created", "expires", "customer", "machines"] as const;
export type LicenseSort = (typeof licenseSorts)[number];

const sortColumns = {
  created: "licenses.created_at",
  expires: "licenses.expires_at",
  customer: "licenses.customer_name",
  machines: "licenses.active_machines",
} as const;

/** Newest first, cursor-paginated (the admin API, the CSV export): each page an index seek. */
export async function listLicenses(
  db: Kysely<DB>,
  filter: LicenseFilter,
  now = Date.now(),
): Promise<Page<LicenseView>> {
  let query = licenseViewsOf(filteredLicenses(db, filter, now))
    .orderBy("licenses.created_at", "desc")
    .orderBy("licenses.id", "desc")
    .limit(filter.limit + 1);
  if (filter.cursor !== undefined) {
    const { at, id } = decodeCursor(filter.cursor);
    // A row value, so that the next page starts where the index holds the cursor.
    query = query.where((eb) =>
      eb(eb.refTuple("licenses.created_at", "licenses.id"), "<", eb.tuple(at, id)),
    );
  }
  const rows = await query.execute();
  const last = rows[filter.limit - 1];
  return {
    items: rows.slice(0, filter.limit).map(toLicenseView),
    nextCursor: rows.length > filter.limit && last ? encodeCursor(last.created_at, last.id) : null,
  };
}

/**
 * One numbered page of the licenses a filter matches, in the order asked, and how many match.
 * The page's ids come first, from the licenses alone (an index when one holds the order, and
 * without reading rows to skip earlier pages), then those rows with their product.
 */
export async function browseLicenses(
  db: Kysely<DB>,
  filter: Omit<LicenseFilter, "cursor">,
  order: { sort: LicenseSort; descending: boolean; offset: number },
  now = Date.now(),
): Promise<{ items: LicenseView[]; total: number }> {
  const direction = order.descending ? "desc" : "asc";
  const ids = filteredLicenses(db, filter, now)
    .select("licenses.id")
    .orderBy(sortKey(order.sort, narrows(filter)), direction)
    .orderBy("licenses.id", direction)
    .limit(filter.limit)
    .offset(order.offset);
  const rows = await selectLicenseViews(db)
    .where("licenses.id", "in", ids)
    .orderBy(sortColumns[order.sort], direction)
    .orderBy("licenses.id", direction)
    .execute();
  // A page that is not full, and not past the end, tells the total without counting.
  if (rows.length < filter.limit && (rows.length > 0 || order.offset === 0)) {
    return { items: rows.map(toLicenseView), total: order.offset + rows.length };
  }
  const counted = await filteredLicenses(db, filter, now)
    .select((eb) => eb.fn.countAll<string | number>().as("total"))
    .executeTakeFirst();
  return { items: rows.map(toLicenseView), total: Number(counted?.total ?? 0) };
}

/**
 * Whether the filter keeps few licenses that an index finds (a status other than ACTIVE, at the
 * limit, expiring soon, one external id or machine): those are read and sorted, rather than
 * walking every license in the order's index to find them.
 */
function narrows(filter: Omit<LicenseFilter, "cursor">): boolean {
  return (
    (filter.status !== undefined && filter.status !== "ACTIVE") ||
    filter.atLimit === true ||
    filter.expiringWithinDays !== undefined ||
    filter.externalId !== undefined ||
    (filter.machineId !== undefined && filter.machineId !== "")
  );
}

/** The sort's column, or (narrowing filters) the same values as an expression no index serves. */
function sortKey(sort: LicenseSort, narrowing: boolean) {
  const column = sql.ref(sortColumns[sort]);
  if (!narrowing) return column;
  return sort === "customer" ? sql<string | null>`${column} || ''` : sql<number>`${column} + 0`;
}

/**
 * The licenses a filter matches, before anything is selected: the licenses alone (a product's
 * slug becomes its id by a subquery), so a count or a page's ids read nothing else.
 */
function filteredLicenses(db: Kysely<DB>, filter: Omit<LicenseFilter, "cursor">, now: number) {
  let query = db.selectFrom("licenses");
  if (filter.product !== undefined) {
    const productId = db
      .selectFrom("products")
      .select("products.id")
      .where("products.slug", "=", filter.product);
    query = query.where("licenses.product_id", "=", productId);
  }
  if (filter.productIds !== undefined && filter.productIds !== null) {
    // "" matches no id and keeps the list non-empty (an empty IN list is not SQL).
    query = query.where("licenses.product_id", "in", [...filter.productIds, ""]);
  }
  if (filter.status !== undefined) query = query.where("licenses.status", "=", filter.status);
  if (filter.status !== undefined && filter.status !== "ACTIVE") {
    // The partial index of the licenses that are not ACTIVE applies when its condition is here.
    query = query.where("licenses.status", "<>", sql.lit("ACTIVE" as const));
  }
  if (filter.externalId !== undefined) {
    query = query.where("licenses.external_id", "=", filter.externalId);
  }
  if (filter.expired === true) query = query.where((eb) => expiredAt(eb, now));
  if (filter.expired === false) query = query.where((eb) => unexpiredAt(eb, now));
  if (filter.expiringWithinDays !== undefined) {
    const until = now + filter.expiringWithinDays * 86_400_000;
    query = query.where((eb) => expiringBetween(eb, now, until));
  }
  if (filter.atLimit === true) {
    query = query.where((eb) =>
      eb("licenses.active_machines", ">=", eb.ref("licenses.max_machines")),
    );
  }
  if (filter.machineId !== undefined && filter.machineId !== "") {
    const machineId = filter.machineId;
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom("activations")
          .select("activations.id")
          .whereRef("activations.license_id", "=", "licenses.id")
          .where("activations.machine_id", "=", machineId)
          .where("activations.deactivated_at", "is", null),
      ),
    );
  }
  if (filter.q !== undefined && filter.q !== "") {
    const escaped = filter.q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`);
    const contains = sql`${`%${escaped}%`} escape '\\'`;
    const folded = (column: string) => foldedForLike(db, column);
    query = query.where((eb) =>
      eb.or([
        eb(folded("licenses.license_key"), "like", sql`${`${escaped}%`} escape '\\'`),
        eb(folded("licenses.customer_name"), "like", contains),
        eb(folded("licenses.customer_email"), "like", contains),
        eb(folded("licenses.external_id"), "like", contains),
        eb(folded("licenses.note"), "like", contains),
      ]),
    );
  }
  return query;
}

/** What a license view needs, selected from filtered licenses. */
function licenseViewsOf(query: ReturnType<typeof filteredLicenses>) {
  return query
    .innerJoin("products", "products.id", "licenses.product_id")
    .selectAll("licenses")
    .select("products.slug as product_slug");
}
