import { parseArgs } from "node:util";
import {
  type Options,
  publishOptions,
  stringOption,
  UsageError,
  usageErrorOf,
} from "@shipkey/publish";
import { parseIsoTimestamp } from "../lib/time.js";
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

/**
 * Every command's options; publish's come from @shipkey/publish. `--critical` is a flag of
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
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
        slug: { type: "string" },
        name: { type: "string" },
        "max-machines": { type: "string" },
        key: { type: "string" },
        status: { type: "string" },
        "expires-at": { type: "string" },
        edition: { type: "string" },
        "edition-name": { type: "string" },
        features: { type: "string" },
        scopes: { type: "string" },
        products: { type: "string" },
        "customer-name": { type: "string" },
        "customer-email": { type: "string" },
        note: { type: "string" },
        "external-id": { type: "string" },
        email: { type: "string" },
        "password-stdin": { type: "boolean" },
        "tauri-public-key": { type: "string" },
        "updates-require-license": { type: "string" },
        "download-redirects": { type: "string" },
        kid: { type: "string" },
        seconds: { type: "string" },
        force: { type: "boolean" },
        "with-created": { type: "boolean" },
        machines: { type: "string" },
        machine: { type: "string" },
        "per-30-days": { type: "string" },
        days: { type: "string" },
        "max-deactivations-per-30-days": { type: "string" },
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
        product: { type: "string" },
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

export function statusOption(options: Options): LicenseStatus | undefined {
  const value = stringOption(options, "status");
  if (value === undefined) return undefined;
  if (!(licenseStatuses as readonly string[]).includes(value)) {
    throw new UsageError(`--status must be one of ${licenseStatuses.join(", ")}`);
  }
  return value as LicenseStatus;
}

/** `--expires-at <iso>`; with allowNever, `never` clears the expiry (null). */
export function expiryOption(options: Options, allowNever: boolean): number | null | undefined {
  const value = stringOption(options, "expires-at");
  if (value === undefined) return undefined;
  if (allowNever && value === "never") return null;
  const ms = parseIsoTimestamp(value);
  if (ms === null) {
    throw new UsageError(
      `--expires-at must be an ISO 8601 timestamp with a zone, e.g. 2027-01-31T23:59:59Z${allowNever ? ", or never" : ""}`,
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
