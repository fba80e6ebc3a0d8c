import { type Static, type TSchema, Type } from "typebox";
import {
  adminContract,
  DateTime,
  NullableDateTime,
  NullableInteger,
  NullableString,
  Slug,
  strict,
  StringEnum,
} from "./kit.js";
import { License } from "./licenses.js";
import { limits, planRanges, planReactions } from "./vocabulary.js";

/**
 * A product's plans (license templates) on the admin API: products:read to read them,
 * products:write to change them (docs/selling.md). A license made from a plan copies its
 * settings, so changing a plan changes no license.
 */
const tag = "Admin: products" as const;
const ProductParams = Type.Object({ slug: Slug });
const PlanParams = Type.Object({ slug: Slug, plan: Slug });
const planErrors = ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY", "PLAN_NOT_FOUND"] as const;

const Days = (description: string) =>
  NullableInteger({ minimum: 1, maximum: planRanges.maxDays, description });
const Reaction = (description: string) => StringEnum(planReactions, { description });

const planFields = {
  name: Type.String({ minLength: 1, maxLength: limits.name }),
  edition: NullableString({ maxLength: limits.edition }),
  editionName: NullableString({ maxLength: limits.edition }),
  features: Type.Array(Type.String({ minLength: 1, maxLength: limits.feature }), {
    maxItems: limits.features,
  }),
  maxMachines: Type.Integer({
    minimum: 1,
    maximum: limits.maxMachines,
    description: "Machine slots per unit bought: a license of quantity n gets maxMachines × n",
  }),
  durationDays: Days("How long a license lasts from its creation; null: perpetual"),
  updatesWindowDays: Days(
    "Days of updates from the license's creation, stored as the license's updatesUntil; null: " +
      "updates for as long as the license is valid",
  ),
  subscription: Type.Boolean({
    description:
      "A subscription: its license expires at the paid period's end plus graceDays (needs " +
      "durationDays, the period when the payment names none)",
  }),
  graceDays: Type.Integer({
    minimum: 0,
    maximum: planRanges.maxGraceDays,
    description: "A subscription's days of grace after its paid period; other plans ignore it",
  }),
  onRefund: Reaction(
    "What a full refund does to the license: revoke (the default), suspend or nothing",
  ),
  onChargeback: Reaction(
    "What a chargeback does to the license: suspend (the default), revoke or nothing",
  ),
  floatingLeaseMinutes: NullableInteger({
    minimum: planRanges.minLeaseMinutes,
    maximum: planRanges.maxLeaseMinutes,
    description: "A floating plan's lease in minutes (1 to 1440); null: machines are node-locked",
  }),
};
const optional = <P extends Record<string, TSchema>>(properties: P) =>
  Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, Type.Optional(v)])) as {
    [K in keyof P]: ReturnType<typeof Type.Optional<P[K]>>;
  };

export const Plan = Type.Object(
  {
    id: Type.String({ description: "The plan's id (pln_…): what a license's planId names" }),
    product: Type.String({ description: "The product's slug" }),
    slug: Type.String({ description: "The vendor's stable code for the plan, unique per product" }),
    ...planFields,
    edition: NullableString(),
    editionName: NullableString(),
    archivedAt: NullableDateTime(
      "When the plan was archived: it makes no new license; null while in use",
    ),
    licenses: Type.Integer({ description: "Licenses made from the plan" }),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  },
  { title: "Plan" },
);
export type Plan = Static<typeof Plan>;

export const CreatePlanBody = Type.Object(
  {
    slug: Type.String({
      minLength: 1,
      maxLength: limits.identifier,
      description: "Lowercase letters, digits and inner dashes; never changes",
    }),
    name: planFields.name,
    maxMachines: planFields.maxMachines,
    ...optional({
      edition: planFields.edition,
      editionName: planFields.editionName,
      features: planFields.features,
      durationDays: planFields.durationDays,
      updatesWindowDays: planFields.updatesWindowDays,
      subscription: planFields.subscription,
      graceDays: planFields.graceDays,
      onRefund: planFields.onRefund,
      onChargeback: planFields.onChargeback,
      floatingLeaseMinutes: planFields.floatingLeaseMinutes,
    }),
  },
  strict,
);
export type CreatePlanBody = Static<typeof CreatePlanBody>;

export const PlanSettingsBody = Type.Object(optional(planFields), {
  ...strict,
  minProperties: 1,
  description: "At least one setting; the licenses made from the plan keep theirs",
});
export type PlanSettingsBody = Static<typeof PlanSettingsBody>;

export const listPlans = adminContract({
  method: "GET",
  url: "/api/admin/products/:slug/plans",
  operationId: "listPlans",
  tag,
  summary: "A product's plans, oldest first (archived ones too)",
  auth: "products:read",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY"],
  schema: { params: ProductParams, response: { 200: Type.Object({ items: Type.Array(Plan) }) } },
});

export const createPlan = adminContract({
  method: "POST",
  url: "/api/admin/products/:slug/plans",
  operationId: "createPlan",
  tag,
  summary: "Create a plan (a license template)",
  auth: "products:write",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY", "PLAN_SLUG_TAKEN"],
  schema: { params: ProductParams, body: CreatePlanBody, response: { 201: Plan } },
});

export const getPlan = adminContract({
  method: "GET",
  url: "/api/admin/products/:slug/plans/:plan",
  operationId: "getPlan",
  tag,
  summary: "Get a plan by its slug",
  auth: "products:read",
  errors: planErrors,
  schema: { params: PlanParams, response: { 200: Plan } },
});

export const updatePlan = adminContract({
  method: "PATCH",
  url: "/api/admin/products/:slug/plans/:plan",
  operationId: "updatePlan",
  tag,
  summary: "Change a plan's settings",
  description:
    "Changes the given settings for the licenses made from now on; the licenses already made " +
    "keep theirs. An archived plan can still be changed.",
  auth: "products:write",
  errors: planErrors,
  schema: { params: PlanParams, body: PlanSettingsBody, response: { 200: Plan } },
});

const archiveChange = (action: "archive" | "unarchive", summary: string) =>
  adminContract({
    method: "POST",
    url: `/api/admin/products/:slug/plans/:plan/${action}`,
    operationId: `${action}Plan`,
    tag,
    summary,
    auth: "products:write",
    errors: planErrors,
    schema: { params: PlanParams, response: { 200: Plan } },
  });
export const archivePlan = archiveChange(
  "archive",
  "Archive a plan: it makes no new license; its licenses are unchanged",
);
export const unarchivePlan = archiveChange("unarchive", "Put an archived plan back in use");

export const deletePlan = adminContract({
  method: "DELETE",
  url: "/api/admin/products/:slug/plans/:plan",
  operationId: "deletePlan",
  tag,
  summary: "Delete a plan that made no license",
  description: "A plan with licenses cannot be deleted (409 PLAN_IN_USE): archive it instead.",
  auth: "products:write",
  errors: [...planErrors, "PLAN_IN_USE"],
  schema: {
    params: PlanParams,
    response: {
      200: Type.Object({
        deleted: Type.Literal(true),
        product: Type.String(),
        plan: Type.String(),
      }),
    },
  },
});

export const createPlanLicense = adminContract({
  method: "POST",
  url: "/api/admin/products/:slug/plans/:plan/licenses",
  operationId: "createPlanLicense",
  tag: "Admin: licenses",
  summary: "Create a license from a plan",
  description:
    "A license with the plan's settings: its edition and features, maxMachines × quantity " +
    "slots, an expiry from its duration (a subscription's: the period's end plus its grace) and " +
    "its planId. Refused for an archived plan (409 PLAN_ARCHIVED).",
  auth: "licenses:write",
  errors: [...planErrors, "PLAN_ARCHIVED", "LICENSE_KEY_TAKEN", "EXTERNAL_ID_TAKEN"],
  schema: {
    params: PlanParams,
    body: Type.Object(
      {
        quantity: Type.Optional(
          Type.Integer({
            minimum: 1,
            maximum: planRanges.maxQuantity,
            description: "Units bought (default 1): the license gets maxMachines × quantity slots",
          }),
        ),
        periodEndsAt: Type.Optional(
          Type.String({
            maxLength: limits.timestamp,
            description:
              "A subscription's paid period end (ISO 8601 with a zone); default: durationDays " +
              "from now",
          }),
        ),
        licenseKey: Type.Optional(Type.String({ minLength: 1, maxLength: limits.identifier })),
        customerName: Type.Optional(NullableString({ maxLength: limits.name })),
        customerEmail: Type.Optional(NullableString({ maxLength: limits.name })),
        externalId: Type.Optional(NullableString({ maxLength: limits.identifier })),
        note: Type.Optional(NullableString({ maxLength: limits.note })),
      },
      strict,
    ),
    response: { 201: License },
  },
});
