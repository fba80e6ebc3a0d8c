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
import { emailKinds, emailLimits, emailPlaceholders, emailStates, limits } from "./vocabulary.js";

/**
 * The admin API's e-mail (docs/email.md): the outbox's messages and their resend, under the
 * licenses scopes (every message is about a license and holds its key and its customer's
 * address, which licenses:read guards); a product's templates under the products scopes. A key
 * limited to products lists only those products' messages, and is refused another product's
 * (403 PRODUCT_NOT_IN_KEY), as it is that product's licenses.
 */
const strict = { additionalProperties: false } as const;
const tag = "Admin: e-mail" as const;
const EmailParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: limits.id }) });
const ProductParams = Type.Object({
  slug: Type.String({ minLength: 1, maxLength: limits.identifier }),
});

export const EmailMessage = Type.Object(
  {
    id: Type.String(),
    kind: StringEnum(emailKinds),
    idempotencyKey: Type.String({ description: "One message per key: its cause's own" }),
    product: NullableString({ description: "The product's slug; null once it is deleted" }),
    licenseKey: NullableString({ description: "The license it is about; null once deleted" }),
    to: Type.String({ description: "The recipient's address" }),
    toName: NullableString(),
    subject: Type.String(),
    state: StringEnum(emailStates, {
      description:
        "pending: waiting for its next attempt (or for SMTP_URL); sending: an attempt holds it; " +
        "sent: the SMTP server accepted it; failed: refused for good (a 5xx reply) or out of retries",
    }),
    attempts: Type.Integer(),
    nextAttemptAt: NullableDateTime("When the next attempt is due; null unless pending"),
    lastAttemptAt: NullableDateTime(),
    lastResponseCode: NullableInteger({
      description: "The last attempt's SMTP reply code; null without a reply (a connection error)",
    }),
    lastResponse: NullableString({
      description: "The last attempt's SMTP reply, or the connection error",
    }),
    messageId: NullableString({ description: "The Message-ID header sent" }),
    sentAt: NullableDateTime(),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  },
  { title: "EmailMessage" },
);
export type EmailMessage = Static<typeof EmailMessage>;

export const EmailMessageDetail = Type.Object(
  {
    ...EmailMessage.properties,
    text: Type.String({ description: "The text part, as sent" }),
    html: Type.String({ description: "The HTML part, as sent" }),
  },
  { title: "EmailMessageDetail" },
);
export type EmailMessageDetail = Static<typeof EmailMessageDetail>;

const Template = Type.Object(
  {
    subject: Type.String({ minLength: 1, maxLength: emailLimits.subject }),
    body: Type.String({ minLength: 1, maxLength: emailLimits.body }),
  },
  strict,
);

/** A kind's new subject and body; null: the default text again. */
const TemplateChange = Type.Optional(Type.Union([Template, Type.Null()]));

export const EmailSettings = Type.Object(
  {
    product: Type.String({ description: "The product's slug" }),
    vendorName: NullableString({
      description: "The name messages are signed with ({{vendorName}}); null: the product's name",
    }),
    downloadUrl: NullableString({
      description: "The download link of license-delivered messages ({{downloadUrl}}); null: none",
    }),
    expiryReminders: Type.Boolean({
      description:
        "true: a license_expiring message to each license's customer 7 days before it ends " +
        "(for licenses that do not renew by themselves); default false",
    }),
    templates: Type.Array(
      Type.Object({
        kind: StringEnum(emailKinds),
        subject: Type.String(),
        body: Type.String(),
        custom: Type.Boolean({ description: "false: the default text" }),
      }),
    ),
    placeholders: Type.Array(StringEnum(emailPlaceholders)),
  },
  { title: "EmailSettings" },
);
export type EmailSettings = Static<typeof EmailSettings>;

export const listEmails = adminContract({
  method: "GET",
  url: "/api/admin/emails",
  operationId: "listEmails",
  tag,
  summary: "The outbox's messages, newest first",
  auth: "licenses:read",
  schema: {
    querystring: Type.Object(
      {
        state: Type.Optional(StringEnum(emailStates)),
        productSlug: Type.Optional(Type.String({ minLength: 1, maxLength: limits.identifier })),
        ...PageQuery,
      },
      strict,
    ),
    response: { 200: Page(EmailMessage) },
  },
});

export const getEmail = adminContract({
  method: "GET",
  url: "/api/admin/emails/:id",
  operationId: "getEmail",
  tag,
  summary: "One message, with its text and HTML as sent",
  auth: "licenses:read",
  errors: ["EMAIL_NOT_FOUND", "PRODUCT_NOT_IN_KEY"],
  schema: { params: EmailParams, response: { 200: EmailMessageDetail } },
});

export const resendEmail = adminContract({
  method: "POST",
  url: "/api/admin/emails/:id/resend",
  operationId: "resendEmail",
  tag,
  summary: "Send a message again (any state), with a fresh retry schedule",
  description:
    "The message as it was rendered, to the same address. Without SMTP_URL it waits, pending.",
  auth: "licenses:write",
  errors: ["EMAIL_NOT_FOUND", "PRODUCT_NOT_IN_KEY"],
  schema: { params: EmailParams, response: { 202: EmailMessage } },
});

export const getEmailSettings = adminContract({
  method: "GET",
  url: "/api/admin/products/:slug/email",
  operationId: "getEmailSettings",
  tag,
  summary: "A product's e-mail: vendor name, download link, and each kind's subject and body",
  auth: "products:read",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY"],
  schema: { params: ProductParams, response: { 200: EmailSettings } },
});

export const updateEmailSettings = adminContract({
  method: "PATCH",
  url: "/api/admin/products/:slug/email",
  operationId: "updateEmailSettings",
  tag,
  summary: "Change a product's vendor name, download link or templates",
  description:
    "A template set to null goes back to the default text. A placeholder that does not exist, " +
    "or a section left open, is refused (400 EMAIL_TEMPLATE_INVALID, `field` naming the part). " +
    "Messages already queued keep the text they were rendered with.",
  auth: "products:write",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY", "EMAIL_TEMPLATE_INVALID"],
  schema: {
    params: ProductParams,
    body: Type.Object(
      {
        vendorName: Type.Optional(
          NullableString({
            maxLength: emailLimits.vendorName,
            description: "null: the product's name",
          }),
        ),
        downloadUrl: Type.Optional(
          NullableString({
            maxLength: emailLimits.downloadUrl,
            description: "An http(s) URL; null: none",
          }),
        ),
        expiryReminders: Type.Optional(Type.Boolean()),
        templates: Type.Optional(
          Type.Object(
            {
              license_delivered: TemplateChange,
              payment_failed: TemplateChange,
              license_expiring: TemplateChange,
              license_suspended: TemplateChange,
              license_revoked: TemplateChange,
            },
            { ...strict, minProperties: 1 },
          ),
        ),
      },
      { ...strict, minProperties: 1 },
    ),
    response: { 200: EmailSettings },
  },
});
