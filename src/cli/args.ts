import { parseArgs } from "node:util";
import {
  type Options,
  publishOptions,
  stringOption,
  UsageError,
  usageErrorOf,
} from "@shipkey/publish";
import { parseIsoTimestamp } from "../lib/time.js";
import { licenseSettings } from "../contracts/license-settings.js";
import { productSettings } from "../contracts/product-settings.js";
import { cliOptionsOf } from "../contracts/settings.js";
import { type LicenseStatus, licenseStatuses } from "../contracts/vocabulary.js";

// The errors and option readers are @shipkey/publish's own, so `shipkey publish` (the package's
// command) and every other command fail alike: one CommandError, one UsageError.
export {
  CommandError,
  integerOption,
  type Options,
  requiredOption,
  stringOption,
  UsageError,
} from "@shipkey/publish";

/** The options that set a license's or a product's settings (contracts' settings tables). */
const settingOptions = Object.fromEntries(
  [...cliOptionsOf(licenseSettings), ...cliOptionsOf(productSettings)].map(({ option }) => [
    option,
    { type: "string" } as const,
  ]),
);

/**
 * Every command's options; publish's come from @shipkey/publish, the settings' from their tables. `--critical` is a flag of
 * `publish` (the package's own) and takes on|off in `releases critical`: the command, always the
 * first word, decides which.
 */
export function parseCommandLine(argv: string[]): { positionals: string[]; options: Options } {
  const critical =
    argv.find((arg) => !arg.startsWith("-")) === "publish"
      ? publishOptions.critical
      : ({ type: "string" } as const);
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        ...publishOptions,
        ...settingOptions,
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
        slug: { type: "string" },
        name: { type: "string" },
        key: { type: "string" },
        scopes: { type: "string" },
        products: { type: "string" },
        email: { type: "string" },
        "password-stdin": { type: "boolean" },
        "tauri-public-key": { type: "string" },
        "updates-require-license": { type: "string" },
        "download-redirects": { type: "string" },
        kid: { type: "string" },
        force: { type: "boolean" },
        "with-created": { type: "boolean" },
        machine: { type: "string" },
        expired: { type: "string" },
        search: { type: "string" },
        q: { type: "string" },
        limit: { type: "string" },
        cursor: { type: "string" },
        percent: { type: "string" },
        "step-hours": { type: "string" },
        pause: { type: "boolean" },
        resume: { type: "boolean" },
        complete: { type: "boolean" },
        critical,
        url: { type: "string" },
        events: { type: "string" },
        description: { type: "string" },
        enabled: { type: "string" },
        "grace-hours": { type: "string" },
        "duration-days": { type: "string" },
        "updates-window-days": { type: "string" },
        subscription: { type: "string" },
        "grace-days": { type: "string" },
        "on-refund": { type: "string" },
        "on-chargeback": { type: "string" },
        "floating-lease-minutes": { type: "string" },
        restore: { type: "boolean" },
        state: { type: "string" },
        product: { type: "string" },
        failed: { type: "boolean" },
        provider: { type: "string" },
        mode: { type: "string" },
        "secret-stdin": { type: "boolean" },
        "remove-secret": { type: "string" },
        replay: { type: "string" },
        map: { type: "string" },
        unmap: { type: "string" },
        plan: { type: "string" },
        "quantity-means": { type: "string" },
      },
    });
    return { positionals, options: values };
  } catch (err) {
    throw usageErrorOf(err);
  }
}

/** `on` or `off` (undefined when not given); anything else is a usage error. */
export function switchOption(options: Options, name: string): boolean | undefined {
  const value = stringOption(options, name);
  if (value === undefined) return undefined;
  if (value !== "on" && value !== "off") throw new UsageError(`--${name} must be on or off`);
  return value === "on";
}

/** One of `values` (undefined when not given); anything else is a usage error. */
export function choiceOption<const V extends readonly string[]>(
  options: Options,
  name: string,
  values: V,
): V[number] | undefined {
  const value = stringOption(options, name);
  if (value === undefined) return undefined;
  const known = values.find((v) => v === value);
  if (known === undefined) throw new UsageError(`--${name} must be one of ${values.join(", ")}`);
  return known;
}

export function statusOption(options: Options): LicenseStatus | undefined {
  return choiceOption(options, "status", licenseStatuses);
}

/**
 * `--expires-at <iso>` (or the option `name`); `never`, the word for null when one is given,
 * clears the expiry (null).
 */
export function expiryOption(
  options: Options,
  never: string | false,
  name = "expires-at",
): number | null | undefined {
  const value = stringOption(options, name);
  if (value === undefined) return undefined;
  if (never !== false && value === never) return null;
  const ms = parseIsoTimestamp(value);
  if (ms === null) {
    throw new UsageError(
      `--${name} must be an ISO 8601 timestamp with a zone, e.g. 2027-01-31T23:59:59Z${never === false ? "" : `, or ${never}`}`,
    );
  }
  return ms;
}

/** A comma-separated list; an empty string is the empty list. */
export function listOption(options: Options, name: string): string[] | undefined {
  const value = stringOption(options, name);
  if (value === undefined) return undefined;
  return value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}
