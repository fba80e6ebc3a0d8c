import type { Kysely } from "kysely";
import { claimCheckout } from "../../contracts/checkout-claim.js";
import type { DB } from "../../db/schema.js";
import { claimOrder } from "../../domain/integrations/claim.js";
import { ShipkeyError } from "../../errors.js";
import { type App, routeSchema } from "../contract-route.js";

/** Which query parameter names the order, per provider. */
const orderParameter = { stripe: "session", paddle: "transaction", lemonsqueezy: "order" } as const;
const retryAfterSeconds = 2;

/** GET /api/checkout/claim: 202 pending (an order not seen, or no order), then 200 masked. */
export function checkoutClaimRoute(app: App, db: Kysely<DB>): void {
  app.get(claimCheckout.url, { schema: routeSchema(claimCheckout) }, async (request, reply) => {
    const { provider } = request.query;
    const name = orderParameter[provider];
    const orderId = request.query[name];
    if (orderId === undefined) {
      throw new ShipkeyError("MISSING_REQUIRED_FIELDS", `${provider} names its order by ${name}`, {
        fields: [name],
      });
    }
    reply.header("cache-control", "no-store");
    const ready = await claimOrder(db, provider, orderId);
    if (ready) return ready;
    return reply
      .status(202)
      .header("retry-after", String(retryAfterSeconds))
      .send({ status: "pending" as const, retryAfterSeconds });
  });
}
