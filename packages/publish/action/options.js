// Generated from packages/publish/src by `npm run build:action`: edit the source, then run it.
/** A mistake on the command line: printed as one line with the usage hint. */
export class UsageError extends Error {
    name = "UsageError";
}
/**
 * node:util parseArgs' complaint as a UsageError in this CLI's words: the option named in double
 * quotes, as every other message names a value (parseArgs' own text talks of `<value>` and
 * leaves a quote open).
 */
export function usageErrorOf(err) {
    const message = err instanceof Error ? err.message : String(err);
    const code = err?.code;
    const option = /'(-[^' ]*)/.exec(message)?.[1];
    if (option === undefined)
        return new UsageError(message);
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION")
        return new UsageError(`Unknown option "${option}"`);
    if (code !== "ERR_PARSE_ARGS_INVALID_OPTION_VALUE")
        return new UsageError(message);
    if (message.includes("does not take an argument")) {
        return new UsageError(`${option} takes no value`);
    }
    if (message.includes("ambiguous")) {
        return new UsageError(`${option} needs a value (for one that starts with "-", write ${option}=-value)`);
    }
    return new UsageError(`${option} needs a value`);
}
/**
 * A failure with a machine-readable code, e.g. the server's answer to a publish. `error` is what
 * --json prints (the server's own text); `message` is the one line printed otherwise.
 */
export class CommandError extends Error {
    code;
    error;
    name = "CommandError";
    constructor(message, code, error = message) {
        super(message);
        this.code = code;
        this.error = error;
    }
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
    "rollout-percent": { type: "string" },
    "rollout-step-hours": { type: "string" },
    critical: { type: "boolean" },
    "dry-run": { type: "boolean" },
};
export function stringOption(options, name) {
    const value = options[name];
    return typeof value === "string" ? value : undefined;
}
export function requiredOption(options, name) {
    const value = stringOption(options, name);
    if (value === undefined || value === "")
        throw new UsageError(`--${name} is required`);
    return value;
}
export function integerOption(options, name) {
    const value = stringOption(options, name);
    if (value === undefined)
        return undefined;
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
        throw new UsageError(`--${name} must be a non-negative integer, got "${value}"`);
    }
    return Number(value);
}
