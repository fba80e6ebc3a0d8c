import { type Static, Type } from "typebox";
import { contract, StringEnum } from "./kit.js";
import { integrationProviders } from "./vocabulary.js";

const OrderRef = Type.String({ pattern: "^[A-Za-z0-9_-]{1,255}$" });

export const ClaimPending = Type.Object(
  {
    status: Type.Literal("pending"),
    retryAfterSeconds: Type.Integer({ description: "When to ask again" }),
  },
  { title: "ClaimPending" },
);

export const ClaimReady = Type.Object(
  {
    status: Type.Literal("ready"),
    licenses: Type.Array(
      Type.Object({
        licenseKey: Type.String({ description: "Masked: its last four characters" }),
        product: Type.String(),
      }),
    ),
    email: Type.Unsafe<string | null>({
      type: ["string", "null"],
      description: "Where the key was sent, masked (a***@example.com); null without an e-mail",
    }),
  },
  { title: "ClaimReady" },
);
export type ClaimReady = Static<typeof ClaimReady>;

/**
 * The vendor's thank-you page asks whether the order's licenses exist yet (docs/selling.md).
 * An order Shipkey has not seen (its webhook not arrived yet, or an id that is no order) is 202
 * pending, the same answer, so the endpoint tells nobody which ids are orders.
 */
export const claimCheckout = contract({
  method: "GET",
  url: "/api/checkout/claim",
  operationId: "claimCheckout",
  tag: "Licenses",
  summary: "The thank-you page's question: are this order's licenses made yet?",
  description:
    "provider=stripe&session=cs_…, provider=paddle&transaction=txn_… or " +
    "provider=lemonsqueezy&order=<order id>. 202 pending until the provider's webhook made the " +
    "licenses (also for an id that is no order: the answers do not tell them apart), then 200 " +
    "with the keys and the address masked; the full key is in the customer's e-mail.",
  auth: "public",
  schema: {
    querystring: Type.Object(
      {
        provider: StringEnum(integrationProviders),
        session: Type.Optional(OrderRef),
        transaction: Type.Optional(OrderRef),
        order: Type.Optional(OrderRef),
      },
      { additionalProperties: false },
    ),
    response: { 200: ClaimReady, 202: ClaimPending },
  },
});
