import { type Static, Type } from "typebox";
import {
  adminContract,
  contract,
  DateTime,
  NullableDateTime,
  NullableString,
  Page,
  PageQuery,
  StringEnum,
} from "./kit.js";
import {
  integrationEventStatuses,
  integrationLimits,
  integrationModes,
  integrationProviders,
  limits,
  quantityMeanings,
} from "./vocabulary.js";

/**
 * Payment integrations (docs/selling.md): a product's Stripe, Paddle Billing or Lemon Squeezy
 * account, the signing secrets its events are verified with (sealed, never shown again), the
 * ledger of events received, and the provider's webhook route itself. The admin routes need
 * products:write; a key limited to products cannot manage integrations.
 */
const strict = { additionalProperties: false } as const;
const tag = "Admin: integrations" as const;
const Id = Type.String({ minLength: 1, maxLength: limits.id });
const IntegrationParams = Type.Object({ id: Id });
const errors = ["INTEGRATION_NOT_FOUND", "PRODUCT_NOT_IN_KEY"] as const;

const Secret = Type.String({
  minLength: integrationLimits.secretMinLength,
  maxLength: integrationLimits.secretMaxLength,
  pattern: "^\\S+$",
  description:
    "The provider's signing secret: Stripe's endpoint secret (whsec_…), Paddle's notification " +
    "destination secret key, or the secret you chose for the Lemon Squeezy webhook. Stored " +
    "sealed under the master key, never shown again",
});
const Mode = StringEnum(integrationModes, {
  description: "live (default): test-mode events are ignored; test: live events are ignored",
});
const Description = NullableString({ maxLength: integrationLimits.description });

export const Integration = Type.Object(
  {
    id: Type.String(),
    product: Type.String({ description: "The product's slug" }),
    provider: StringEnum(integrationProviders),
    mode: StringEnum(integrationModes),
    description: NullableString(),
    webhookUrl: Type.String({
      description:
        "The URL to paste into the provider's dashboard: PUBLIC_URL (else the request's " +
        "origin) and /api/integrations/{provider}/{id}/webhook",
    }),
    secrets: Type.Array(Type.Object({ id: Type.String(), createdAt: DateTime() }), {
      description:
        "The signing secrets held (two during a rotation), oldest first; never their values",
    }),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  },
  { title: "Integration" },
);
export type Integration = Static<typeof Integration>;

export const IntegrationEvent = Type.Object(
  {
    id: Type.String({ description: "Shipkey's id of the received event" }),
    integrationId: Type.String(),
    eventKey: Type.String({
      description:
        "What makes the event unique: the provider's event id (Lemon Squeezy: a digest of the " +
        "event name, the object's id and its updated_at)",
    }),
    eventType: Type.String(),
    objectId: NullableString({ description: "The provider's object: cs_…, txn_…, an order id" }),
    livemode: Type.Unsafe<boolean | null>({
      type: ["boolean", "null"],
      description: "Whether the provider sent it in live mode; null when the event does not say",
    }),
    status: StringEnum(integrationEventStatuses),
    reason: NullableString({
      description: "Why an event was ignored or is waiting; what it did when processed",
    }),
    bodyKept: Type.Boolean({
      description:
        "Whether the raw body is still kept (INTEGRATION_EVENT_BODY_DAYS): only then can it be replayed",
    }),
    attempts: Type.Integer(),
    occurredAt: NullableDateTime("When the provider says it happened"),
    receivedAt: DateTime(),
    processedAt: NullableDateTime(),
    nextAttemptAt: NullableDateTime("A waiting event's next attempt"),
  },
  { title: "IntegrationEvent" },
);
export type IntegrationEvent = Static<typeof IntegrationEvent>;

export const listIntegrations = adminContract({
  method: "GET",
  url: "/api/admin/integrations",
  operationId: "listIntegrations",
  tag,
  summary: "List payment integrations (never their secrets)",
  auth: "products:write",
  errors: ["PRODUCT_NOT_IN_KEY"],
  schema: { response: { 200: Type.Object({ items: Type.Array(Integration) }) } },
});

export const createIntegration = adminContract({
  method: "POST",
  url: "/api/admin/integrations",
  operationId: "createIntegration",
  tag,
  summary: "Connect a product to a payment provider with its signing secret",
  auth: "products:write",
  errors: ["PRODUCT_NOT_IN_KEY", "PRODUCT_NOT_FOUND"],
  schema: {
    body: Type.Object(
      {
        product: Type.String({ minLength: 1, maxLength: limits.identifier }),
        provider: StringEnum(integrationProviders),
        mode: Type.Optional(Mode),
        secret: Secret,
        description: Type.Optional(Description),
      },
      strict,
    ),
    response: { 201: Integration },
  },
});

export const getIntegration = adminContract({
  method: "GET",
  url: "/api/admin/integrations/:id",
  operationId: "getIntegration",
  tag,
  summary: "Get a payment integration",
  auth: "products:write",
  errors,
  schema: { params: IntegrationParams, response: { 200: Integration } },
});

export const updateIntegration = adminContract({
  method: "PATCH",
  url: "/api/admin/integrations/:id",
  operationId: "updateIntegration",
  tag,
  summary: "Change an integration's mode or description",
  auth: "products:write",
  errors,
  schema: {
    params: IntegrationParams,
    body: Type.Object(
      { mode: Type.Optional(Mode), description: Type.Optional(Description) },
      { ...strict, minProperties: 1 },
    ),
    response: { 200: Integration },
  },
});

export const deleteIntegration = adminContract({
  method: "DELETE",
  url: "/api/admin/integrations/:id",
  operationId: "deleteIntegration",
  tag,
  summary: "Delete an integration, its secrets and its events",
  description: "The licenses its orders created stay.",
  auth: "products:write",
  errors,
  schema: {
    params: IntegrationParams,
    response: { 200: Type.Object({ deleted: Type.Literal(true), id: Type.String() }) },
  },
});

export const addIntegrationSecret = adminContract({
  method: "POST",
  url: "/api/admin/integrations/:id/secrets",
  operationId: "addIntegrationSecret",
  tag,
  summary: "Add a signing secret (a rotation: add the new one, then remove the old)",
  description:
    `An integration holds at most ${integrationLimits.secretsAtOnce} secrets; an event ` +
    "verified by either is accepted.",
  auth: "products:write",
  errors: [...errors, "INTEGRATION_SECRETS_FULL"],
  schema: {
    params: IntegrationParams,
    body: Type.Object({ secret: Secret }, strict),
    response: { 201: Integration },
  },
});

export const removeIntegrationSecret = adminContract({
  method: "DELETE",
  url: "/api/admin/integrations/:id/secrets/:secretId",
  operationId: "removeIntegrationSecret",
  tag,
  summary: "Remove a signing secret; the last one cannot be removed",
  auth: "products:write",
  errors: [...errors, "INTEGRATION_SECRET_NOT_FOUND", "INTEGRATION_LAST_SECRET"],
  schema: {
    params: Type.Object({ id: Id, secretId: Id }),
    response: { 200: Integration },
  },
});

const EventParams = Type.Object({ id: Id, eventId: Id });

export const listIntegrationEvents = adminContract({
  method: "GET",
  url: "/api/admin/integrations/:id/events",
  operationId: "listIntegrationEvents",
  tag,
  summary: "The events an integration received, newest first",
  description: "status=ignored lists the alerts: events the product could not use, with why.",
  auth: "products:write",
  errors,
  schema: {
    params: IntegrationParams,
    querystring: Type.Object(
      { status: Type.Optional(StringEnum(integrationEventStatuses)), ...PageQuery },
      strict,
    ),
    response: { 200: Page(IntegrationEvent) },
  },
});

export const getIntegrationEvent = adminContract({
  method: "GET",
  url: "/api/admin/integrations/:id/events/:eventId",
  operationId: "getIntegrationEvent",
  tag,
  summary: "One received event: what it did, or why it was ignored",
  auth: "products:write",
  errors: [...errors, "INTEGRATION_EVENT_NOT_FOUND"],
  schema: { params: EventParams, response: { 200: IntegrationEvent } },
});

export const replayIntegrationEvent = adminContract({
  method: "POST",
  url: "/api/admin/integrations/:id/events/:eventId/replay",
  operationId: "replayIntegrationEvent",
  tag,
  summary: "Process an ignored or waiting event again (after fixing a price mapping)",
  description:
    "Only an event not yet processed whose raw body is still kept; its effects, as any " +
    "event's, happen at most once.",
  auth: "products:write",
  errors: [...errors, "INTEGRATION_EVENT_NOT_FOUND", "INTEGRATION_EVENT_NOT_REPLAYABLE"],
  schema: { params: EventParams, response: { 200: IntegrationEvent } },
});

export const receiveIntegrationEvent = contract({
  method: "POST",
  url: "/api/integrations/:provider/:id/webhook",
  operationId: "receiveIntegrationEvent",
  tag,
  summary: "The provider's webhook: verified on the raw body, recorded once, then processed",
  description:
    "Stripe-Signature, Paddle-Signature or X-Signature, as each provider specifies " +
    "(docs/selling.md). 200 for an event processed, ignored (with a reason) or already " +
    "received; 400 for a missing or wrong signature or a stale timestamp, which changes nothing.",
  auth: "public",
  errors: [
    "INTEGRATION_NOT_FOUND",
    "WEBHOOK_SIGNATURE_MISSING",
    "WEBHOOK_SIGNATURE_INVALID",
    "WEBHOOK_TIMESTAMP_STALE",
    "INVALID_JSON",
    "PAYLOAD_TOO_LARGE",
  ],
  schema: {
    params: Type.Object({
      provider: Type.String({ maxLength: limits.id }),
      id: Type.String({ maxLength: limits.id }),
    }),
    response: {
      200: Type.Object({
        received: Type.Literal(true),
        status: StringEnum([...integrationEventStatuses, "duplicate"] as const),
      }),
    },
  },
});

export const PriceMapping = Type.Object(
  {
    priceId: Type.String({
      description: "Stripe price_…, Paddle pri_…, or a Lemon Squeezy variant id",
    }),
    planId: Type.String({ description: "The plan its purchase creates licenses from" }),
    quantityMeans: StringEnum(quantityMeanings, {
      description:
        "seats: one license with the plan's slots × the quantity; licenses: that many licenses",
    }),
    createdAt: DateTime(),
  },
  { title: "PriceMapping" },
);
export type PriceMapping = Static<typeof PriceMapping>;

const PriceParams = Type.Object({
  id: Id,
  priceId: Type.String({ minLength: 1, maxLength: limits.identifier }),
});

export const listPriceMappings = adminContract({
  method: "GET",
  url: "/api/admin/integrations/:id/prices",
  operationId: "listPriceMappings",
  tag,
  summary: "The provider's prices an integration maps to plans",
  auth: "products:write",
  errors,
  schema: {
    params: IntegrationParams,
    response: { 200: Type.Object({ items: Type.Array(PriceMapping) }) },
  },
});

export const setPriceMapping = adminContract({
  method: "PUT",
  url: "/api/admin/integrations/:id/prices/:priceId",
  operationId: "setPriceMapping",
  tag,
  summary: "Map a provider's price to a plan (replacing its mapping)",
  description:
    "An event for an unmapped price is ignored with that reason; replay it after mapping.",
  auth: "products:write",
  errors,
  schema: {
    params: PriceParams,
    body: Type.Object(
      {
        planId: Type.String({ minLength: 1, maxLength: limits.id }),
        quantityMeans: Type.Optional(
          StringEnum(quantityMeanings, { description: "Default seats" }),
        ),
      },
      strict,
    ),
    response: { 200: PriceMapping },
  },
});

export const removePriceMapping = adminContract({
  method: "DELETE",
  url: "/api/admin/integrations/:id/prices/:priceId",
  operationId: "removePriceMapping",
  tag,
  summary: "Stop mapping a provider's price",
  auth: "products:write",
  errors: [...errors, "INTEGRATION_PRICE_NOT_FOUND"],
  schema: {
    params: PriceParams,
    response: { 200: Type.Object({ deleted: Type.Literal(true), priceId: Type.String() }) },
  },
});
