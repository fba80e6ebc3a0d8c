import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { maskLicenseKey } from "../licenses/license-key.js";
import type { ClaimReady } from "../../contracts/checkout-claim.js";
import type { IntegrationProvider } from "../../contracts/vocabulary.js";

/** An e-mail address as the thank-you page shows it: a***@example.com. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf("@");
  if (at < 1) return "***";
  return `${email.slice(0, 1)}***${email.slice(at)}`;
}

/** An order's licenses, masked, once a provider's event made them; null until then. */
export async function claimOrder(
  db: Kysely<DB>,
  provider: IntegrationProvider,
  orderId: string,
): Promise<ClaimReady | null> {
  const order = await db
    .selectFrom("integration_orders")
    .innerJoin("integrations", "integrations.id", "integration_orders.integration_id")
    .select(["license_ids", "customer_email"])
    .where("integrations.provider", "=", provider)
    .where((eb) =>
      eb.or([
        eb("integration_orders.order_id", "=", orderId),
        eb("integration_orders.checkout_id", "=", orderId),
      ]),
    )
    .executeTakeFirst();
  if (!order) return null;
  const ids = JSON.parse(order.license_ids) as string[];
  const licenses =
    ids.length === 0
      ? []
      : await db
          .selectFrom("licenses")
          .innerJoin("products", "products.id", "licenses.product_id")
          .select(["licenses.license_key", "products.slug"])
          .where("licenses.id", "in", ids)
          .orderBy("licenses.created_at")
          .execute();
  return {
    status: "ready",
    licenses: licenses.map((l) => ({ licenseKey: maskLicenseKey(l.license_key), product: l.slug })),
    email: order.customer_email === null ? null : maskEmail(order.customer_email),
  };
}
