import { churnLimitDescription } from "./product-settings.js";
import { choice, count, list, nullableCount, text, time } from "./settings.js";
import { deactivationLimitRange, licenseStatuses, limits } from "./vocabulary.js";

/** "ACTIVE, SUSPENDED or REVOKED". */
export const statusNames = `${licenseStatuses.slice(0, -1).join(", ")} or ${licenseStatuses.at(-1)}`;

/**
 * A license's settings, in the order the admin API's bodies list them (and its refusals check
 * them): what createLicense and updateLicense take, the dashboard's license form and the CLI's
 * `licenses create` and `licenses update` options.
 */
export const licenseSettings = {
  status: choice(licenseStatuses, {
    default: "ACTIVE",
    label: "Status",
    cli: { option: "status", value: "<status>", help: statusNames },
  }),
  expiresAt: time("ISO 8601 timestamp with a zone; null: never expires", {
    label: "Expires",
    form: { hint: "(UTC, empty = never)" },
    cli: {
      create: {
        option: "expires-at",
        value: "<iso>",
        help: "when it expires, e.g. 2027-01-31T23:59:59Z; default: never",
      },
      update: {
        option: "expires-at",
        value: "<iso>",
        orNull: "never",
        help: "a new expiry; never: the license never expires",
      },
    },
  }),
  maxMachines: count(
    { min: 0, max: limits.maxMachines },
    {
      says: `an integer from 0 to ${limits.maxMachines}`,
      requiredOnCreate: true,
      label: "Machine slots",
      form: {},
      cli: { option: "max-machines", value: "<n>", help: "machines it may be active on at once" },
    },
  ),
  edition: text(limits.edition, "line", {
    label: "Edition",
    form: { hint: "(e.g. pro)" },
    cli: { option: "edition", value: "<e>", help: "the edition's code, e.g. pro; empty: none" },
  }),
  editionName: text(limits.edition, "line", {
    label: "Edition name",
    form: { hint: "(e.g. Professional)" },
    cli: { option: "edition-name", value: "<n>", help: "the edition's display name; empty: none" },
  }),
  features: list(
    "feature",
    { maxItems: limits.features, itemMaxLength: limits.feature },
    {
      label: "Features",
      form: { hint: "(comma-separated)" },
      cli: {
        option: "features",
        value: "<a,b,c>",
        help: "comma-separated feature codes; empty: none",
      },
    },
  ),
  customerName: text(limits.name, "line", {
    label: "Customer name",
    form: {},
    cli: { option: "customer-name", value: "<n>", help: "the customer's name" },
  }),
  customerEmail: text(limits.name, "email", {
    label: "Customer email",
    form: {},
    cli: { option: "customer-email", value: "<e>", help: "the customer's email address" },
  }),
  note: text(limits.note, "lines", {
    label: "Note",
    form: {},
    cli: { option: "note", value: "<text>", help: "a note for admins" },
  }),
  /** The caller's own reference (an order id), unique per product; null or "" clears it. */
  externalId: text(limits.identifier, "line", {
    label: "External id",
    form: { hint: "(e.g. an order id; unique per product)" },
    cli: {
      option: "external-id",
      value: "<id>",
      help: "your own reference (an order id), unique per product",
    },
  }),
  /** Public deactivations allowed in the trailing 30 days, overriding the product's. */
  maxDeactivationsPer30Days: nullableCount(deactivationLimitRange, {
    description: `${churnLimitDescription}; overrides the product's; null: the product's applies`,
    label: "Deactivations by the app in 30 days",
    form: { hint: "(empty = the product's limit)" },
    cli: {
      option: "max-deactivations-per-30-days",
      value: "<n>",
      orNull: "product",
      help: "the license's own churn limit; product: the product's applies",
    },
  }),
};

export type LicenseSettingsTable = typeof licenseSettings;
export type LicenseSettingName = keyof LicenseSettingsTable;
