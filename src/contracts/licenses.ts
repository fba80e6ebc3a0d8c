import { type Static, Type } from "typebox";
import {
  contract,
  DateTime,
  licenseErrors,
  LicenseKeyParams,
  NullableDateTime,
  NullableInteger,
  NullableString,
  Page,
  PageQuery,
  Slug,
  StringEnum,
  strict,
} from "./kit.js";
import { ActiveMachine, OfflinePlace, PastActivation } from "./machines.js";
import { Product } from "./products.js";
import { licenseStatuses, limits } from "./vocabulary.js";
import { licenseSettings } from "./license-settings.js";
import { createProperties, optional, settingProperties } from "./settings.js";

// The admin API's licenses: their settings, lists and status changes (machines: machines.ts).

/** A license's settings as the admin API takes them (expiresAt as ISO text). */
export const LicenseSettingsBody = Type.Object(optional(settingProperties(licenseSettings)), {
  ...strict,
  minProperties: 1,
});
export type LicenseSettingsBody = Static<typeof LicenseSettingsBody>;

export const CreateLicenseBody = Type.Object(
  {
    productSlug: Slug,
    licenseKey: Type.Optional(Type.String({ minLength: 1, maxLength: limits.identifier })),
    ...createProperties(licenseSettings),
  },
  strict,
);

export const License = Type.Object(
  {
    licenseKey: Type.String(),
    product: Type.String({ description: "The product's slug" }),
    status: StringEnum(licenseStatuses),
    expiresAt: NullableDateTime(),
    edition: NullableString(),
    editionName: NullableString(),
    features: Type.Array(Type.String()),
    maxMachines: Type.Integer(),
    activeMachines: Type.Integer(),
    customerName: NullableString(),
    customerEmail: NullableString(),
    note: NullableString(),
    externalId: NullableString(),
    maxDeactivationsPer30Days: NullableInteger({
      description: "The license's own churn limit; null: its product's applies",
    }),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  },
  { title: "License" },
);
export type License = Static<typeof License>;

export const LicenseDetail = Type.Object(
  {
    ...License.properties,
    machines: Type.Array(ActiveMachine, {
      description:
        "Active machines in activation order: the first 200 (activeMachines counts them all)",
    }),
    machinesNextCursor: NullableString({
      description:
        "Set when the license has more than 200 active machines: pass as `cursor` to " +
        "GET /api/admin/licenses/{licenseKey}/machines for the next page; null otherwise",
    }),
    deactivationsLast30Days: Type.Integer({
      description: "The app's deactivations in the trailing 30 days: what the churn limit counts",
    }),
    machineLeaseDays: Product.properties.machineLeaseDays,
    pastActivations: Type.Array(PastActivation, {
      description: "Ended activations, newest first (at most 100)",
    }),
    offlinePlaces: Type.Array(OfflinePlace, {
      description:
        "Deactivated machines still running on a certificate, the soonest to end first (at " +
        "most 200)",
    }),
    offlineAllowance: Product.properties.offlineAllowance,
  },
  { title: "LicenseDetail" },
);
export type LicenseDetail = Static<typeof LicenseDetail>;

export const listLicenses = contract({
  method: "GET",
  url: "/api/admin/licenses",
  operationId: "listLicenses",
  tag: "Admin: licenses",
  summary: "List licenses, newest first",
  auth: "licenses:read",
  schema: {
    querystring: Type.Object(
      {
        product: Type.Optional(Type.String({ maxLength: limits.identifier })),
        status: Type.Optional(StringEnum(licenseStatuses)),
        expired: Type.Optional(StringEnum(["true", "false"])),
        q: Type.Optional(
          Type.String({
            maxLength: limits.identifier,
            description:
              "Key prefix, or part of the customer's name or email, the external id or the note",
          }),
        ),
        externalId: Type.Optional(Type.String({ maxLength: limits.identifier })),
        ...PageQuery,
      },
      strict,
    ),
    response: { 200: Page(License) },
  },
});

export const createLicense = contract({
  method: "POST",
  url: "/api/admin/licenses",
  operationId: "createLicense",
  tag: "Admin: licenses",
  summary: "Create a license",
  auth: "licenses:write",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY", "LICENSE_KEY_TAKEN", "EXTERNAL_ID_TAKEN"],
  schema: { body: CreateLicenseBody, response: { 201: License } },
});

export const getLicense = contract({
  method: "GET",
  url: "/api/admin/licenses/:licenseKey",
  operationId: "getLicense",
  tag: "Admin: licenses",
  summary: "Get a license with its machines",
  auth: "licenses:read",
  errors: licenseErrors,
  schema: { params: LicenseKeyParams, response: { 200: LicenseDetail } },
});

export const updateLicense = contract({
  method: "PATCH",
  url: "/api/admin/licenses/:licenseKey",
  operationId: "updateLicense",
  tag: "Admin: licenses",
  summary: "Change a license's settings",
  auth: "licenses:write",
  errors: [...licenseErrors, "EXTERNAL_ID_TAKEN"],
  schema: { params: LicenseKeyParams, body: LicenseSettingsBody, response: { 200: License } },
});

const statusChange = (action: "suspend" | "revoke" | "reinstate", summary: string) =>
  contract({
    method: "POST",
    url: `/api/admin/licenses/:licenseKey/${action}`,
    operationId: `${action}License`,
    tag: "Admin: licenses",
    summary,
    auth: "licenses:write",
    errors: licenseErrors,
    schema: { params: LicenseKeyParams, response: { 200: License } },
  });
export const suspendLicense = statusChange("suspend", "Suspend a license");
export const revokeLicense = statusChange("revoke", "Revoke a license");
export const reinstateLicense = statusChange("reinstate", "Reinstate a license");
