import type { Kysely, Selectable } from "kysely";
import type { DB, IntegrationPricesTable } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { toIso } from "../../lib/time.js";
import { requireIntegrationRow } from "./integrations.js";
import type { PriceMapping } from "../../contracts/integrations.js";
import type { QuantityMeaning } from "../../contracts/vocabulary.js";

type PriceRow = Selectable<IntegrationPricesTable>;

/** A provider's price (or Lemon Squeezy variant) id mapped to a plan: set, replacing any. */
export async function setPriceMapping(
  db: Kysely<DB>,
  integrationId: string,
  input: { priceId: string; planId: string; quantityMeans: QuantityMeaning },
  now = Date.now(),
): Promise<PriceMapping> {
  await requireIntegrationRow(db, integrationId);
  const row: PriceRow = {
    integration_id: integrationId,
    price_id: input.priceId,
    plan_id: input.planId,
    quantity_means: input.quantityMeans,
    created_at: now,
  };
  await db
    .insertInto("integration_prices")
    .values(row)
    .onConflict((oc) =>
      oc
        .columns(["integration_id", "price_id"])
        .doUpdateSet({ plan_id: input.planId, quantity_means: input.quantityMeans }),
    )
    .execute();
  return toPriceView((await findPriceMapping(db, integrationId, input.priceId)) ?? row);
}

export async function removePriceMapping(
  db: Kysely<DB>,
  integrationId: string,
  priceId: string,
): Promise<void> {
  await requireIntegrationRow(db, integrationId);
  const result = await db
    .deleteFrom("integration_prices")
    .where("integration_id", "=", integrationId)
    .where("price_id", "=", priceId)
    .executeTakeFirst();
  if (result.numDeletedRows === 0n) {
    throw new ShipkeyError(
      "INTEGRATION_PRICE_NOT_FOUND",
      `Integration ${integrationId} maps no price ${priceId}`,
    );
  }
}

export async function listPriceMappings(
  db: Kysely<DB>,
  integrationId: string,
): Promise<PriceMapping[]> {
  await requireIntegrationRow(db, integrationId);
  const rows = await db
    .selectFrom("integration_prices")
    .selectAll()
    .where("integration_id", "=", integrationId)
    .orderBy("price_id")
    .execute();
  return rows.map(toPriceView);
}

export function findPriceMapping(
  db: Kysely<DB>,
  integrationId: string,
  priceId: string,
): Promise<PriceRow | undefined> {
  return db
    .selectFrom("integration_prices")
    .selectAll()
    .where("integration_id", "=", integrationId)
    .where("price_id", "=", priceId)
    .executeTakeFirst();
}

const toPriceView = (row: PriceRow): PriceMapping => ({
  priceId: row.price_id,
  planId: row.plan_id,
  quantityMeans: row.quantity_means,
  createdAt: toIso(row.created_at),
});
