import { type Static, Type } from "typebox";
import {
  contract,
  DateTime,
  Deleted,
  NullableDateTime,
  NullableInteger,
  NullableString,
  Slug,
  SlugParams,
  StringEnum,
  strict,
} from "./kit.js";
import { Jwk } from "./license-api.js";
import {
  churnLimitDescription,
  machineLeaseDescription,
  productSettings,
} from "./product-settings.js";
import { optional, settingProperties } from "./settings.js";
import { limits, signingKeyStatuses } from "./vocabulary.js";

// The admin API's products and their signing keys.

export const Product = Type.Object(
  {
    id: Type.String(),
    slug: Type.String(),
    name: Type.String(),
    createdAt: DateTime(),
    offlinePeriodSeconds: Type.Integer({
      description: "How long a license certificate lasts (POST /api/license/checkout)",
    }),
    offlineAllowance: Type.Integer({
      description:
        "Machines beyond a license's maxMachines that may hold an unexpired certificate at once",
    }),
    maxDeactivationsPer30Days: NullableInteger({
      description: `${churnLimitDescription}; null: no limit`,
    }),
    machineLeaseDays: NullableInteger({
      description: `${machineLeaseDescription}; null: machines keep their slots until deactivated`,
    }),
    updatesRequireLicense: Type.Boolean({
      description: "Feeds and downloads answer only machines activated on a usable license",
    }),
    downloadRedirects: Type.Boolean({
      description: "Feeds hand out the counted /api/downloads redirect instead of the stored URL",
    }),
    tauriPublicKey: NullableString({
      description:
        "The Tauri updater's minisign public key (tauri.conf.json plugins.updater.pubkey); " +
        "while set, publish refuses signatures not made by it",
    }),
    tauriKeyId: NullableString({
      description: "The key's minisign key id, 16 hex digits, as tauri signer generate prints it",
    }),
  },
  { title: "Product" },
);
export type Product = Static<typeof Product>;

export const ProductSettings = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: limits.name })),
    updatesRequireLicense: Type.Optional(Product.properties.updatesRequireLicense),
    downloadRedirects: Type.Optional(Product.properties.downloadRedirects),
    tauriPublicKey: Type.Optional(
      NullableString({
        maxLength: limits.tauriPublicKey,
        description:
          "tauri.conf.json's plugins.updater.pubkey (base64 of the minisign public key file); " +
          "null clears it",
      }),
    ),
    ...optional(settingProperties(productSettings)),
  },
  {
    ...strict,
    minProperties: 1,
    description: "At least one setting; each given one is changed, all in one transaction",
  },
);
export type ProductSettings = Static<typeof ProductSettings>;

export const listProducts = contract({
  method: "GET",
  url: "/api/admin/products",
  operationId: "listProducts",
  tag: "Admin: products",
  summary: "List products",
  description: "A key limited to products lists only those.",
  auth: "products:read",
  schema: { response: { 200: Type.Object({ items: Type.Array(Product) }) } },
});

export const createProduct = contract({
  method: "POST",
  url: "/api/admin/products",
  operationId: "createProduct",
  tag: "Admin: products",
  summary: "Create a product",
  description:
    "Creates a product and its signing key. A key limited to products cannot (403 PRODUCT_NOT_IN_KEY).",
  auth: "products:write",
  errors: ["PRODUCT_SLUG_TAKEN", "PRODUCT_NOT_IN_KEY"],
  schema: {
    body: Type.Object(
      {
        slug: Type.String({ minLength: 1, maxLength: limits.identifier }),
        name: Type.String({ minLength: 1, maxLength: limits.name }),
      },
      strict,
    ),
    response: { 201: Product },
  },
});

export const getProduct = contract({
  method: "GET",
  url: "/api/admin/products/:slug",
  operationId: "getProduct",
  tag: "Admin: products",
  summary: "Get a product",
  auth: "products:read",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY"],
  schema: { params: SlugParams, response: { 200: Product } },
});

export const updateProduct = contract({
  method: "PATCH",
  url: "/api/admin/products/:slug",
  operationId: "updateProduct",
  tag: "Admin: products",
  summary: "Change a product's settings",
  description:
    "Changes the given settings: name, update delivery, Tauri public key, how long license " +
    "certificates last (60 s to 90 days), how many machines beyond maxMachines may hold one (the " +
    "offline allowance), and the churn limit on public deactivations.",
  auth: "products:write",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY"],
  schema: { params: SlugParams, body: ProductSettings, response: { 200: Product } },
});

export const deleteProduct = contract({
  method: "DELETE",
  url: "/api/admin/products/:slug",
  operationId: "deleteProduct",
  tag: "Admin: products",
  summary: "Delete a product without licenses or releases",
  auth: "products:write",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_IN_USE", "PRODUCT_NOT_IN_KEY"],
  schema: { params: SlugParams, response: { 200: Deleted({ slug: Type.String() }) } },
});

export const SigningKey = Type.Object(
  {
    kid: Type.String(),
    status: StringEnum(signingKeyStatuses),
    createdAt: DateTime(),
    retiredAt: NullableDateTime(),
    endorsement: NullableString({
      description:
        "Compact JWS by the key that was current when this one was prepared; null if none",
    }),
    jwk: Jwk,
    pem: Type.String({ description: "The public key as SPKI PEM" }),
  },
  { title: "SigningKey" },
);
export type SigningKey = Static<typeof SigningKey>;
const SigningKeys = Type.Array(SigningKey);

export const listSigningKeys = contract({
  method: "GET",
  url: "/api/admin/products/:slug/keys",
  operationId: "listSigningKeys",
  tag: "Admin: products",
  summary: "List a product's signing keys",
  description: "The product's signing keys (public halves only): current, next, then retired ones.",
  auth: "products:read",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY"],
  schema: { params: SlugParams, response: { 200: Type.Object({ items: SigningKeys }) } },
});

export const prepareSigningKey = contract({
  method: "POST",
  url: "/api/admin/products/:slug/keys/prepare",
  operationId: "prepareSigningKey",
  tag: "Admin: products",
  summary: "Prepare the next signing key (rotation, step one)",
  description:
    "A next signing key, endorsed by the current one, published in the JWKS and announced on " +
    "signed answers. It signs nothing until promoted.",
  auth: "products:write",
  errors: [
    "PRODUCT_NOT_FOUND",
    "PRODUCT_NOT_IN_KEY",
    "SIGNING_KEY_NEXT_EXISTS",
    "KEY_ROTATION_CONFLICT",
  ],
  schema: {
    params: SlugParams,
    response: {
      201: Type.Object({ kid: Type.String(), endorsedBy: Type.String(), keys: SigningKeys }),
    },
  },
});

export const promoteSigningKey = contract({
  method: "POST",
  url: "/api/admin/products/:slug/keys/promote",
  operationId: "promoteSigningKey",
  tag: "Admin: products",
  summary: "Promote the next signing key (rotation, step two)",
  description:
    "The next key becomes current (every server signs with it within 15 s) and the current one " +
    "is retired, still published. Refused (409 SIGNING_KEY_TOO_NEW) while the next key is " +
    "younger than the product's offline period, unless force is true.",
  auth: "products:write",
  errors: [
    "PRODUCT_NOT_FOUND",
    "PRODUCT_NOT_IN_KEY",
    "NO_NEXT_SIGNING_KEY",
    "SIGNING_KEY_TOO_NEW",
    "KEY_ROTATION_CONFLICT",
  ],
  schema: {
    params: SlugParams,
    body: Type.Unsafe<{ force?: boolean } | null>({
      type: ["object", "null"],
      additionalProperties: false,
      properties: { force: { type: "boolean" } },
    }),
    response: {
      200: Type.Object({
        kid: Type.String(),
        retiredKid: NullableString(),
        forced: Type.Boolean(),
        keys: SigningKeys,
      }),
    },
  },
});

export const removeSigningKey = contract({
  method: "DELETE",
  url: "/api/admin/products/:slug/keys/:kid",
  operationId: "removeSigningKey",
  tag: "Admin: products",
  summary: "Remove a next or retired signing key",
  description: "Removes it from the JWKS; the current key cannot be removed.",
  auth: "products:write",
  errors: [
    "PRODUCT_NOT_FOUND",
    "PRODUCT_NOT_IN_KEY",
    "SIGNING_KEY_NOT_FOUND",
    "SIGNING_KEY_CURRENT",
  ],
  schema: {
    params: Type.Object({ slug: Slug, kid: Type.String({ minLength: 1, maxLength: limits.id }) }),
    response: { 200: Deleted({ kid: Type.String() }) },
  },
});
