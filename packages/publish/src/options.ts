/** A mistake on the command line: printed as one line with the usage hint. */
export class UsageError extends Error {
  override name = "UsageError";
}

/**
 * A failure with a machine-readable code, e.g. the server's answer to a publish. `error` is what
 * --json prints (the server's own text); `message` is the one line printed otherwise.
 */
export class CommandError extends Error {
  override name = "CommandError";
  constructor(
    message: string,
    readonly code: string,
    readonly error: string = message,
  ) {
    super(message);
  }
}

/** Parsed command-line options, as node:util's parseArgs returns them. */
export type Options = Record<string, string | boolean | undefined>;

/** What a command prints: `data` as JSON with --json, `text` otherwise. */
export interface CommandResult {
  data: unknown;
  text: string;
}

/** The options of a publish, in node:util parseArgs' form (--json and --help are the caller's). */
export const publishOptions = {
  server: { type: "string" },
  product: { type: "string" },
  version: { type: "string" },
  channel: { type: "string" },
  "notes-file": { type: "string" },
  "base-url": { type: "string" },
  platform: { type: "string" },
  arch: { type: "string" },
  timeout: { type: "string" },
  "dry-run": { type: "boolean" },
} as const;

export function stringOption(options: Options, name: string): string | undefined {
  const value = options[name];
  return typeof value === "string" ? value : undefined;
}

export function requiredOption(options: Options, name: string): string {
  const value = stringOption(options, name);
  if (value === undefined || value === "") throw new UsageError(`--${name} is required`);
  return value;
}

export function integerOption(options: Options, name: string): number | undefined {
  const value = stringOption(options, name);
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`--${name} must be a non-negative integer, got "${value}"`);
  }
  return Number(value);
}
