import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import type { IntegrationProvider } from "../../contracts/vocabulary.js";

/** How far back the overview counts ignored payment events. */
export const ignoredEventsDays = 7;

/** A payment integration whose events were ignored in the last days. */
export interface IgnoredPaymentEvents {
  integrationId: string;
  product: string;
  provider: IntegrationProvider;
  /** Its events ignored since then. */
  count: number;
}

/**
 * The integrations of the product (of every product when null) with events ignored in the last
 * `ignoredEventsDays` days, most first: a sale that made no license until its price is mapped
 * or its cause fixed, then the event replayed.
 */
export async function ignoredPaymentEvents(
  db: Kysely<DB>,
  productId: string | null,
  now: number,
): Promise<IgnoredPaymentEvents[]> {
  let query = db
    .selectFrom("integration_events")
    .innerJoin("integrations", "integrations.id", "integration_events.integration_id")
    .innerJoin("products", "products.id", "integrations.product_id")
    .select([
      "integrations.id as integrationId",
      "products.slug as product",
      "integrations.provider as provider",
      (eb) => eb.fn.countAll<number | string>().as("count"),
    ])
    .where("integration_events.status", "=", "ignored")
    .where("integration_events.received_at", ">=", now - ignoredEventsDays * 86_400_000)
    .groupBy(["integrations.id", "products.slug", "integrations.provider"]);
  if (productId !== null) query = query.where("integrations.product_id", "=", productId);
  const rows = await query.execute();
  return rows
    .map((row) => ({ ...row, count: Number(row.count) }))
    .sort((a, b) => b.count - a.count || a.integrationId.localeCompare(b.integrationId));
}
