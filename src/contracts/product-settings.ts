import { count, nullableCount, type SettingValues } from "./settings.js";
import {
  deactivationLimitRange,
  machineLeaseDaysRange,
  offlineAllowanceRange,
  offlinePeriod,
} from "./vocabulary.js";

export const churnLimitDescription =
  "Public deactivations allowed per license in the trailing 30 days (403 " +
  "DEACTIVATION_LIMIT_REACHED beyond)";

export const machineLeaseDescription =
  "Days a machine keeps its slot without being seen (activate, validate, checkout; an unexpired " +
  "certificate counts as seen until its exp); then the server deactivates it";

const days = (seconds: number) => seconds / 86_400;

/**
 * A product's offline and seat settings, in the order the admin API's body lists them: what the
 * product's setters take and the CLI's `products set-*` commands' options. (Its name, update
 * delivery and Tauri key have rules of their own: products.ts.)
 */
export const productSettings = {
  offlinePeriodSeconds: count(
    { min: offlinePeriod.minSeconds, max: offlinePeriod.maxSeconds },
    {
      says:
        `a whole number from ${offlinePeriod.minSeconds} to ${offlinePeriod.maxSeconds} ` +
        `(${days(offlinePeriod.maxSeconds)} days)`,
      cli: {
        option: "seconds",
        value: "<n>",
        help:
          `the certificate lifetime, ${offlinePeriod.minSeconds} s to ` +
          `${days(offlinePeriod.maxSeconds)} days`,
      },
    },
  ),
  offlineAllowance: count(offlineAllowanceRange, {
    description:
      "Machines beyond a license's maxMachines that may hold an unexpired certificate at " +
      `once (default ${offlineAllowanceRange.default}); checkout beyond it is 403 ` +
      "OFFLINE_LIMIT_REACHED",
    cli: {
      option: "machines",
      value: "<n>",
      help:
        `${offlineAllowanceRange.min} to ${offlineAllowanceRange.max} ` +
        `(default ${offlineAllowanceRange.default})`,
    },
  }),
  maxDeactivationsPer30Days: nullableCount(deactivationLimitRange, {
    description: `${churnLimitDescription}; null: no limit (the default). A license's own value overrides it`,
    cli: {
      option: "per-30-days",
      value: "<n>",
      orNull: "none",
      help: "deactivations allowed per license; none: no limit (default)",
    },
  }),
  machineLeaseDays: nullableCount(machineLeaseDaysRange, {
    description: `${machineLeaseDescription}; null: off (the default)`,
    cli: {
      option: "days",
      value: "<n>",
      orNull: "none",
      help: "days a machine keeps its slot unseen; none: for ever (default)",
    },
  }),
};

export type ProductSettingsTable = typeof productSettings;

/** A product's offline and seat settings as the domain takes them. */
export type ProductSettingValues = SettingValues<ProductSettingsTable>;
