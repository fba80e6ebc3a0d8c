import { type Static, Type } from "typebox";
import {
  adminContract,
  DateTime,
  NullableDateTime,
  NullableInteger,
  NullableString,
  Page,
  PageQuery,
  StringEnum,
} from "./kit.js";
import { limits, webhookDeliveryStatuses, webhookEventTypes, webhookLimits } from "./vocabulary.js";

/**
 * The admin API's webhook endpoints (scope webhooks:write, every route): where events go, their
 * deliveries, a redelivery, a test event and the secret's rotation (docs/webhooks.md). What only
 * licenses:read reads (license keys, customers) stays behind licenses:read: a delivery's payload
 * is masked without it, and an event from before a URL change is not redelivered without it.
 */
const strict = { additionalProperties: false } as const;
const tag = "Admin: webhooks" as const;
const EndpointId = Type.String({ minLength: 1, maxLength: limits.id });
const EndpointParams = Type.Object({ id: EndpointId });
const DeliveryParams = Type.Object({
  id: EndpointId,
  eventId: Type.String({ minLength: 1, maxLength: limits.id }),
});
const endpointErrors = ["WEBHOOK_ENDPOINT_NOT_FOUND", "PRODUCT_NOT_IN_KEY"] as const;

const Url = Type.String({
  minLength: 1,
  maxLength: webhookLimits.url,
  description:
    "https; http, and private, loopback or link-local addresses, only when the server sets " +
    "WEBHOOKS_ALLOW_PRIVATE=true",
});
const Events = Type.Array(StringEnum(webhookEventTypes), {
  minItems: 1,
  maxItems: webhookEventTypes.length,
  uniqueItems: true,
  description: "The event types sent to the endpoint",
});
const Products = Type.Unsafe<string[] | null>({
  type: ["array", "null"],
  items: { type: "string", minLength: 1, maxLength: limits.identifier },
  minItems: 1,
  maxItems: limits.productsPerScope,
  description:
    "Slugs of the products whose events the endpoint hears about (each must exist); null: every " +
    "product. Events about no product (api_key.*) go to every endpoint that subscribes to them",
});
const Description = NullableString({ maxLength: webhookLimits.description });

export const WebhookEndpoint = Type.Object(
  {
    id: Type.String(),
    url: Type.String(),
    description: NullableString(),
    events: Type.Array(StringEnum(webhookEventTypes)),
    products: Type.Unsafe<string[] | null>({
      type: ["array", "null"],
      items: { type: "string" },
      description: "Product slugs the endpoint is limited to; null: every product",
    }),
    enabled: Type.Boolean(),
    disabledReason: NullableString({
      description: "Why the service disabled the endpoint (a long run of failures); null otherwise",
    }),
    consecutiveFailures: Type.Integer({ description: "Failed attempts since the last success" }),
    licenseDataWithheld: Type.Boolean({
      description:
        "Whoever last set the URL lacked licenses:read: what is sent there has license keys " +
        "masked and no customer name or e-mail. Setting the URL with licenses:read clears it",
    }),
    previousSecretExpiresAt: NullableDateTime(
      "After a rotation: until when the previous secret signs too; null when it does not",
    ),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  },
  { title: "WebhookEndpoint" },
);
export type WebhookEndpoint = Static<typeof WebhookEndpoint>;

const Secret = Type.String({
  description: "The signing secret (whsec_…, Standard Webhooks), shown once, stored sealed",
});

export const CreatedWebhookEndpoint = Type.Object(
  { ...WebhookEndpoint.properties, secret: Secret },
  { title: "CreatedWebhookEndpoint" },
);
export type CreatedWebhookEndpoint = Static<typeof CreatedWebhookEndpoint>;

export const WebhookDelivery = Type.Object(
  {
    eventId: Type.String({ description: "The event's id: the webhook-id header of every attempt" }),
    endpointId: Type.String(),
    eventType: Type.String(),
    status: StringEnum(webhookDeliveryStatuses),
    attempts: Type.Integer(),
    createdAt: DateTime(),
    lastAttemptAt: NullableDateTime(),
    nextAttemptAt: NullableDateTime("When the next attempt is due; null unless pending"),
    responseStatus: NullableInteger({ description: "The last attempt's HTTP status" }),
    durationMs: NullableInteger({ description: "How long the last attempt took" }),
    lastError: NullableString({
      description: "Why the last attempt failed without an answer (timeout, refused address…)",
    }),
  },
  { title: "WebhookDelivery" },
);
export type WebhookDelivery = Static<typeof WebhookDelivery>;

export const WebhookDeliveryDetail = Type.Object(
  {
    ...WebhookDelivery.properties,
    payload: Type.Record(Type.String(), Type.Unknown(), {
      description:
        "The body sent: {type, timestamp, data}. Without licenses:read, every licenseKey in it " +
        "is masked to its last four characters and customerName and customerEmail are left out",
    }),
    licenseDataWithheld: Type.Boolean({
      description:
        "true when the caller lacks licenses:read and the payload is shown masked (license keys, " +
        "customers' names and e-mails withheld)",
    }),
  },
  { title: "WebhookDeliveryDetail" },
);
export type WebhookDeliveryDetail = Static<typeof WebhookDeliveryDetail>;

export const listWebhookEndpoints = adminContract({
  method: "GET",
  url: "/api/admin/webhook-endpoints",
  operationId: "listWebhookEndpoints",
  tag,
  summary: "List webhook endpoints (never their secrets)",
  auth: "webhooks:write",
  errors: ["PRODUCT_NOT_IN_KEY"],
  schema: { response: { 200: Type.Object({ items: Type.Array(WebhookEndpoint) }) } },
});

export const createWebhookEndpoint = adminContract({
  method: "POST",
  url: "/api/admin/webhook-endpoints",
  operationId: "createWebhookEndpoint",
  tag,
  summary: "Create a webhook endpoint; its secret is in this answer only",
  description:
    "A key limited to products cannot manage webhook endpoints (403 PRODUCT_NOT_IN_KEY): they " +
    "hear about every product unless limited.",
  auth: "webhooks:write",
  errors: ["PRODUCT_NOT_IN_KEY"],
  schema: {
    body: Type.Object(
      {
        url: Url,
        events: Events,
        products: Type.Optional(Products),
        enabled: Type.Optional(Type.Boolean({ description: "Default true" })),
        description: Type.Optional(Description),
      },
      strict,
    ),
    response: { 201: CreatedWebhookEndpoint },
  },
});

export const getWebhookEndpoint = adminContract({
  method: "GET",
  url: "/api/admin/webhook-endpoints/:id",
  operationId: "getWebhookEndpoint",
  tag,
  summary: "Get a webhook endpoint",
  auth: "webhooks:write",
  errors: endpointErrors,
  schema: { params: EndpointParams, response: { 200: WebhookEndpoint } },
});

export const updateWebhookEndpoint = adminContract({
  method: "PATCH",
  url: "/api/admin/webhook-endpoints/:id",
  operationId: "updateWebhookEndpoint",
  tag,
  summary: "Change a webhook endpoint",
  description:
    "Changes the given fields. Enabling an endpoint the service disabled clears its failures; " +
    "its pending deliveries go out again.",
  auth: "webhooks:write",
  errors: endpointErrors,
  schema: {
    params: EndpointParams,
    body: Type.Object(
      {
        url: Type.Optional(Url),
        events: Type.Optional(Events),
        products: Type.Optional(Products),
        enabled: Type.Optional(Type.Boolean()),
        description: Type.Optional(Description),
      },
      { ...strict, minProperties: 1 },
    ),
    response: { 200: WebhookEndpoint },
  },
});

export const deleteWebhookEndpoint = adminContract({
  method: "DELETE",
  url: "/api/admin/webhook-endpoints/:id",
  operationId: "deleteWebhookEndpoint",
  tag,
  summary: "Delete a webhook endpoint and its deliveries",
  auth: "webhooks:write",
  errors: endpointErrors,
  schema: {
    params: EndpointParams,
    response: { 200: Type.Object({ deleted: Type.Literal(true), id: Type.String() }) },
  },
});

export const rotateWebhookSecret = adminContract({
  method: "POST",
  url: "/api/admin/webhook-endpoints/:id/rotate-secret",
  operationId: "rotateWebhookSecret",
  tag,
  summary: "Give the endpoint a new secret; the old one signs too for a grace period",
  description:
    `During the grace period (graceSeconds, 0 to ${webhookLimits.maxGraceSeconds}, default ` +
    `${webhookLimits.defaultGraceSeconds}) every delivery carries two signatures, one per secret.`,
  auth: "webhooks:write",
  errors: endpointErrors,
  schema: {
    params: EndpointParams,
    body: Type.Unsafe<{ graceSeconds?: number } | null>({
      type: ["object", "null"],
      additionalProperties: false,
      properties: {
        graceSeconds: { type: "integer", minimum: 0, maximum: webhookLimits.maxGraceSeconds },
      },
    }),
    response: { 200: CreatedWebhookEndpoint },
  },
});

export const listWebhookDeliveries = adminContract({
  method: "GET",
  url: "/api/admin/webhook-endpoints/:id/deliveries",
  operationId: "listWebhookDeliveries",
  tag,
  summary: "An endpoint's deliveries, newest first",
  auth: "webhooks:write",
  errors: endpointErrors,
  schema: {
    params: EndpointParams,
    querystring: Type.Object(
      { status: Type.Optional(StringEnum(webhookDeliveryStatuses)), ...PageQuery },
      strict,
    ),
    response: { 200: Page(WebhookDelivery) },
  },
});

export const getWebhookDelivery = adminContract({
  method: "GET",
  url: "/api/admin/webhook-endpoints/:id/deliveries/:eventId",
  operationId: "getWebhookDelivery",
  tag,
  summary: "One delivery with its payload",
  description:
    "A caller without licenses:read sees the payload with every license key masked to its last " +
    "four characters and without the customer's name and e-mail (licenseDataWithheld: true).",
  auth: "webhooks:write",
  errors: [...endpointErrors, "WEBHOOK_DELIVERY_NOT_FOUND"],
  schema: { params: DeliveryParams, response: { 200: WebhookDeliveryDetail } },
});

export const redeliverWebhook = adminContract({
  method: "POST",
  url: "/api/admin/webhook-endpoints/:id/deliveries/:eventId/redeliver",
  operationId: "redeliverWebhook",
  tag,
  summary: "Send a delivery again (same webhook-id), with a fresh retry schedule",
  description:
    "An event created before the endpoint's URL last changed was meant for another receiver: " +
    "sending it to the new URL needs licenses:read too (403 REDELIVERY_SCOPE_NOT_HELD without it).",
  auth: "webhooks:write",
  errors: [...endpointErrors, "WEBHOOK_DELIVERY_NOT_FOUND", "REDELIVERY_SCOPE_NOT_HELD"],
  schema: { params: DeliveryParams, response: { 202: WebhookDelivery } },
});

export const sendWebhookTest = adminContract({
  method: "POST",
  url: "/api/admin/webhook-endpoints/:id/test",
  operationId: "sendWebhookTest",
  tag,
  summary: "Send a webhook.test event to this endpoint only",
  auth: "webhooks:write",
  errors: endpointErrors,
  schema: { params: EndpointParams, response: { 202: WebhookDelivery } },
});
