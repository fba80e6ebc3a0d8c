import { type Static, Type } from "typebox";
import { AuditActor } from "./audit.js";
import { contract, DateTime, NullableDateTime, NullableString, StringEnum, strict } from "./kit.js";
import { apiKeyScopes, limits } from "./vocabulary.js";

// The admin API's API keys.

export const ApiKey = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    displayPrefix: Type.String({ description: "The secret's first characters, to recognise it" }),
    scopes: Type.Array(StringEnum(apiKeyScopes)),
    createdAt: DateTime(),
    lastUsedAt: NullableDateTime(),
    expiresAt: NullableDateTime(),
    revokedAt: NullableDateTime(),
    products: Type.Unsafe<string[] | null>({
      type: ["array", "null"],
      items: { type: "string" },
      description: "The slugs of the products the key is limited to; null: every product",
    }),
    createdBy: Type.Union([AuditActor, Type.Null()], {
      description:
        "Who created the key, as the audit log names an actor; null: a key made before " +
        "Shipkey recorded it",
    }),
  },
  { title: "ApiKey" },
);
export type ApiKey = Static<typeof ApiKey>;

export const CreatedApiKey = Type.Object(
  {
    ...ApiKey.properties,
    key: Type.String({ description: "The secret (shk_…), shown once, never stored" }),
  },
  { title: "CreatedApiKey" },
);
export type CreatedApiKey = Static<typeof CreatedApiKey>;

export const listApiKeys = contract({
  method: "GET",
  url: "/api/admin/api-keys",
  operationId: "listApiKeys",
  tag: "Admin: API keys",
  summary: "List API keys (never their secrets)",
  description:
    "Who holds which scopes is itself sensitive: api-keys:write. A key limited to products " +
    "lists only keys limited to some of its products.",
  auth: "api-keys:write",
  schema: { response: { 200: Type.Object({ items: Type.Array(ApiKey) }) } },
});

export const createApiKey = contract({
  method: "POST",
  url: "/api/admin/api-keys",
  operationId: "createApiKey",
  tag: "Admin: API keys",
  summary: "Create an API key; its secret is in this answer only",
  description:
    "An API key may create only keys holding a subset of its scopes and expiring no later than " +
    "itself (else 403 SCOPE_NOT_HELD) and, if it is limited to products, limited to some of them " +
    "(else 403 PRODUCT_NOT_IN_KEY); a signed-in admin may create any key.",
  auth: "api-keys:write",
  errors: ["SCOPE_NOT_HELD", "PRODUCT_NOT_IN_KEY", "PRODUCT_NOT_FOUND"],
  schema: {
    body: Type.Object(
      {
        name: Type.String({ minLength: 1, maxLength: limits.name }),
        scopes: Type.Array(StringEnum(apiKeyScopes), {
          minItems: 1,
          maxItems: apiKeyScopes.length,
        }),
        expiresAt: Type.Optional(
          NullableString({
            maxLength: limits.timestamp,
            description: "ISO 8601 timestamp with a zone; null: never",
          }),
        ),
        products: Type.Optional(
          Type.Unsafe<string[] | null>({
            type: ["array", "null"],
            description:
              "Slugs of the products the key is limited to (each must exist); omitted or null: " +
              "every product. A limited key is refused (403 PRODUCT_NOT_IN_KEY) on any other " +
              "product, and its lists hold only its products.",
            minItems: 1,
            maxItems: limits.productsPerScope,
            items: { type: "string", minLength: 1, maxLength: limits.identifier },
          }),
        ),
      },
      strict,
    ),
    response: { 201: CreatedApiKey },
  },
});

export const revokeApiKey = contract({
  method: "POST",
  url: "/api/admin/api-keys/:id/revoke",
  operationId: "revokeApiKey",
  tag: "Admin: API keys",
  summary: "Revoke an API key, and optionally the keys it created",
  description:
    "An API key may revoke only keys whose scopes it holds (else 403 SCOPE_NOT_HELD) and, if it " +
    "is limited to products, keys limited to some of them (else 403 PRODUCT_NOT_IN_KEY); a " +
    "signed-in admin may revoke any key. With withCreated true, the keys below it (the keys it " +
    "created, the keys those created, and so on) that are neither revoked nor expired are " +
    "revoked with it in one transaction, each under the same rules: one the caller may not " +
    "revoke refuses the whole request. A key with more than " +
    `${limits.keysRevokedWithCreated} keys below it, whatever their state, is refused (400 ` +
    "INVALID_FIELD_VALUE). An already revoked key keeps its revocation time, and withCreated " +
    "still revokes the keys below it.",
  auth: "api-keys:write",
  errors: ["API_KEY_NOT_FOUND", "SCOPE_NOT_HELD", "PRODUCT_NOT_IN_KEY", "INVALID_FIELD_VALUE"],
  schema: {
    params: Type.Object({ id: Type.String({ maxLength: limits.id }) }),
    body: Type.Unsafe<{ withCreated?: boolean } | null>({
      type: ["object", "null"],
      additionalProperties: false,
      properties: {
        withCreated: {
          type: "boolean",
          description: "Also revoke the keys it created, and the keys they created (default false)",
        },
      },
    }),
    response: {
      200: Type.Object(
        {
          ...ApiKey.properties,
          alsoRevoked: Type.Array(Type.String(), {
            description:
              "The ids of the keys revoked with it (withCreated), creators before the keys they " +
              "created; empty without withCreated",
          }),
        },
        { title: "RevokedApiKey" },
      ),
    },
  },
});
