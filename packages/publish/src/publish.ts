import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { basename } from "node:path";
import { pipeline } from "node:stream/promises";
import { recognizeArtifact } from "./artifact-names.js";
import { escapeControlCharacters } from "./control-characters.js";
import {
  CommandError,
  type CommandResult,
  integerOption,
  type Options,
  requiredOption,
  stringOption,
  UsageError,
} from "./options.js";
import { type Arch, arches, type Platform, platforms, rolloutRange } from "./targets.js";

/**
 * A publish (`shipkey-publish`, and `shipkey publish` in the server's CLI): registers build
 * artifacts with a Shipkey server over HTTP, as CI does. The API key comes from SHIPKEY_API_KEY
 * and is never printed.
 */

export interface PlannedArtifact {
  path: string;
  name: string;
  platform: Platform;
  arch: Arch;
}

export interface Plan {
  artifacts: PlannedArtifact[];
  skipped: Array<{ name: string; reason: string }>;
}

export interface Placement {
  platform?: Platform;
  arch?: Arch;
}

export interface ReleaseEntry {
  platform: Platform;
  arch: Arch;
  downloadUrl: string;
  signature?: string;
  fileSize: number;
  sha512: string;
}

export interface PublishBody {
  productSlug: string;
  version: string;
  channel: string;
  releaseNotes?: string;
  releases: ReleaseEntry[];
  rollout?: { percent: number } | { stepHours: number };
  critical?: boolean;
}

const defaultTimeoutSeconds = 30;

/**
 * Places every file on a platform and arch: `--platform`/`--arch` where given, else the file name
 * (artifact-names.ts). A file that cannot be placed, or two files on one platform/arch, is an error.
 */
export function planArtifacts(paths: string[], given: Placement): Plan {
  const plan: Plan = { artifacts: [], skipped: [] };
  for (const path of paths) {
    const name = basename(path);
    const recognition = recognizeArtifact(name);
    if (recognition.kind === "skip") {
      plan.skipped.push({ name, reason: recognition.reason });
      continue;
    }
    const platform = given.platform ?? recognition.platform;
    const arch = given.arch ?? recognition.arch;
    if (platform === null) {
      throw new CommandError(
        `cannot tell the platform of ${name} from its name: pass --platform`,
        "UNRECOGNIZED_ARTIFACT",
      );
    }
    if (arch === null) {
      const why = recognition.unsupportedArch
        ? `${recognition.unsupportedArch} is not an arch Shipkey publishes (${arches.join(", ")})`
        : `cannot tell the arch of ${name} from its name`;
      throw new CommandError(`${why}: pass --arch`, "UNRECOGNIZED_ARTIFACT");
    }
    const clash = plan.artifacts.find((a) => a.platform === platform && a.arch === arch);
    if (clash) {
      throw new CommandError(
        `${clash.name} and ${name} are both ${platform} ${arch}: pass only the updater artifact`,
        "DUPLICATE_ARTIFACT",
      );
    }
    plan.artifacts.push({ path, name, platform, arch });
  }
  if (plan.artifacts.length === 0) {
    throw new UsageError("no artifact to publish among the files given");
  }
  return plan;
}

/** base64 of the SHA-512 digest (as electron-builder writes it) and the size, in one stream. */
export async function digestFile(path: string): Promise<{ sha512: string; fileSize: number }> {
  const hash = createHash("sha512");
  let fileSize = 0;
  await pipeline(createReadStream(path), async (chunks: AsyncIterable<Buffer>) => {
    for await (const chunk of chunks) {
      hash.update(chunk);
      fileSize += chunk.length;
    }
  });
  return { sha512: hash.digest("base64"), fileSize };
}

/** The contents of `<artifact>.sig`, without trailing whitespace; undefined if there is none. */
async function signatureBeside(path: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(`${path}.sig`, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  const signature = text.trimEnd();
  if (signature === "") throw new CommandError(`${basename(path)}.sig is empty`, "EMPTY_SIGNATURE");
  return signature;
}

async function releaseEntry(artifact: PlannedArtifact, baseUrl: string): Promise<ReleaseEntry> {
  const { sha512, fileSize } = await digestFile(artifact.path);
  const signature = await signatureBeside(artifact.path);
  return {
    platform: artifact.platform,
    arch: artifact.arch,
    downloadUrl: baseUrl + encodeURIComponent(artifact.name),
    ...(signature === undefined ? {} : { signature }),
    fileSize,
    sha512,
  };
}

/** Directories (electron-builder's `win-unpacked`, `mac`) are build outputs, not artifacts. */
async function filesOnly(paths: string[]): Promise<{ files: string[]; directories: string[] }> {
  const files: string[] = [];
  const directories: string[] = [];
  for (const path of paths) {
    const stats = await stat(path).catch((err: NodeJS.ErrnoException) => {
      throw new CommandError(
        `cannot read ${path}: ${err.code ?? err.message}`,
        "FILE_NOT_READABLE",
      );
    });
    (stats.isDirectory() ? directories : files).push(path);
  }
  return { files, directories };
}

function timeoutSeconds(options: Options): number {
  const seconds = integerOption(options, "timeout") ?? defaultTimeoutSeconds;
  if (seconds === 0) throw new UsageError("--timeout must be at least 1 second");
  return seconds;
}

function serverUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw.endsWith("/") ? raw : `${raw}/`);
  } catch {
    throw new UsageError(`--server must be a URL, got "${raw}"`);
  }
  const loopback = ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) {
    throw new UsageError("--server must use https (http only for localhost): it carries the key");
  }
  return new URL("api/releases/publish", url);
}

function baseUrlOption(options: Options): string {
  const raw = requiredOption(options, "base-url");
  const base = raw.endsWith("/") ? raw : `${raw}/`;
  if (!URL.canParse(base) || new URL(base).protocol !== "https:") {
    throw new UsageError(`--base-url must be an https URL, got "${raw}"`);
  }
  return base;
}

function enumOption<T extends string>(options: Options, name: string, values: readonly T[]) {
  const raw = stringOption(options, name);
  if (raw === undefined) return undefined;
  const value = values.find((v) => v === raw.toUpperCase());
  if (value === undefined) throw new UsageError(`--${name} must be one of ${values.join(", ")}`);
  return value;
}

async function notesOption(options: Options): Promise<string | undefined> {
  const path = stringOption(options, "notes-file");
  if (path === undefined) return undefined;
  return readFile(path, "utf8").catch((err: NodeJS.ErrnoException) => {
    throw new CommandError(`cannot read ${path}: ${err.code ?? err.message}`, "FILE_NOT_READABLE");
  });
}

async function requestBody(options: Options, artifacts: PlannedArtifact[]): Promise<PublishBody> {
  const baseUrl = baseUrlOption(options);
  const releaseNotes = await notesOption(options);
  const releases: ReleaseEntry[] = [];
  for (const artifact of artifacts) releases.push(await releaseEntry(artifact, baseUrl));
  return {
    productSlug: requiredOption(options, "product"),
    version: requiredOption(options, "version"),
    channel: requiredOption(options, "channel").toUpperCase(),
    ...(releaseNotes === undefined ? {} : { releaseNotes }),
    releases,
    ...rolloutOption(options),
    ...(options.critical === true ? { critical: true } : {}),
  };
}

/** --rollout-percent or --rollout-step-hours (the server's rolloutRange), not both. */
function rolloutOption(options: Options): Pick<PublishBody, "rollout"> {
  const percent = integerOption(options, "rollout-percent");
  const stepHours = integerOption(options, "rollout-step-hours");
  if (percent !== undefined && stepHours !== undefined) {
    throw new UsageError("give --rollout-percent or --rollout-step-hours, not both");
  }
  if (percent !== undefined) {
    const { minPercent, maxPercent } = rolloutRange;
    if (percent < minPercent || percent > maxPercent) {
      throw new UsageError(`--rollout-percent must be ${minPercent} to ${maxPercent}`);
    }
    return { rollout: { percent } };
  }
  if (stepHours !== undefined) {
    const { minStepHours, maxStepHours } = rolloutRange;
    if (stepHours < minStepHours || stepHours > maxStepHours) {
      throw new UsageError(`--rollout-step-hours must be ${minStepHours} to ${maxStepHours}`);
    }
    return { rollout: { stepHours } };
  }
  return {};
}

export async function publishCommand(
  args: string[],
  options: Options,
  env: NodeJS.ProcessEnv = process.env,
): Promise<CommandResult> {
  if (args.length === 0) throw new UsageError("publish needs the artifact files to publish");
  const endpoint = serverUrl(requiredOption(options, "server"));
  const timeoutMs = timeoutSeconds(options) * 1000;
  const dryRun = options["dry-run"] === true;
  const key = env.SHIPKEY_API_KEY ?? "";
  if (!dryRun && key === "") throw new UsageError("SHIPKEY_API_KEY is not set");
  const { files, directories } = await filesOnly(args);
  const plan = planArtifacts(files, {
    platform: enumOption(options, "platform", platforms),
    arch: enumOption(options, "arch", arches),
  });
  plan.skipped.push(...directories.map((d) => ({ name: basename(d), reason: "directory" })));
  const body = await requestBody(options, plan.artifacts);
  if (dryRun) {
    const request = {
      method: "POST",
      url: endpoint.href,
      headers: { authorization: "Bearer <SHIPKEY_API_KEY>", "content-type": "application/json" },
      body,
    };
    return { data: request, text: JSON.stringify(request, null, 2) };
  }
  const answer = await send(endpoint, key, body, timeoutMs);
  return { data: answer, text: publishedText(answer, plan) };
}

async function send(endpoint: URL, key: string, body: PublishBody, timeoutMs: number) {
  try {
    const response = await fetch(endpoint, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
      // A redirect is reported, never followed: following would send the key elsewhere.
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
    return answerOf(response, await response.text());
  } catch (err) {
    if (err instanceof CommandError) throw err;
    throw networkError(endpoint, err, timeoutMs);
  }
}

function answerOf(response: Response, text: string): unknown {
  const status = response.status;
  if (status >= 300 && status < 400) {
    const location = response.headers.get("location") ?? "elsewhere";
    throw new CommandError(
      `the server redirects to ${location}: give that address as --server`,
      `HTTP_${status}`,
    );
  }
  const json = parseJson(text);
  if (response.ok && json !== undefined) return json;
  if (response.ok) throw new CommandError(`the server answered ${status} without JSON`, "HTTP_OK");
  const failure = json as { error?: unknown; code?: unknown; field?: unknown } | undefined;
  if (typeof failure?.error === "string" && typeof failure.code === "string") {
    // The field at fault, where the server names one (releases[0].downloadUrl, version).
    const at = typeof failure.field === "string" ? ` at ${failure.field}` : "";
    throw new CommandError(
      `${failure.error}${at} (${failure.code}, HTTP ${status})`,
      failure.code,
      failure.error,
    );
  }
  throw new CommandError(`the server answered HTTP ${status}`, `HTTP_${status}`);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function networkError(endpoint: URL, err: unknown, timeoutMs: number): CommandError {
  if (err instanceof Error && err.name === "TimeoutError") {
    return new CommandError(
      `no answer from ${endpoint.origin} within ${timeoutMs / 1000} s`,
      "NETWORK_ERROR",
    );
  }
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new CommandError(`cannot reach ${endpoint.origin}: ${reason}`, "NETWORK_ERROR");
}

interface PublishAnswer {
  product?: unknown;
  version?: unknown;
  channel?: unknown;
  releases?: Array<{ platform?: unknown; arch?: unknown; status?: unknown }>;
  critical?: unknown;
  rollout?: { percent?: unknown; stepHours?: unknown } | null;
  warnings?: unknown;
}

/** The rollout and critical lines of an answer that has them. */
function rolloutLines({ critical, rollout }: PublishAnswer): string[] {
  const lines: string[] = [];
  if (rollout) {
    const schedule =
      rollout.stepHours === null ? "" : `, a step every ${String(rollout.stepHours)} h`;
    lines.push(`Rollout: ${String(rollout.percent)} % of machines${schedule}`);
  } else if (rollout === null) {
    lines.push("Rollout: none (offered to every machine)");
  }
  if (critical === true) lines.push("Critical: yes (offered to every machine, rollout or not)");
  return lines;
}

function publishedText(answer: unknown, plan: Plan): string {
  const parsed = answer as PublishAnswer;
  const { product, version, channel, releases = [] } = parsed;
  const lines = [`Published ${String(product)} ${String(version)} (${String(channel)}):`];
  for (const entry of Array.isArray(releases) ? releases : []) {
    const file = plan.artifacts.find((a) => a.platform === entry.platform && a.arch === entry.arch);
    const target = `${String(entry.platform)} ${String(entry.arch)}`;
    lines.push(`  ${target.padEnd(13)} ${String(entry.status).padEnd(8)} ${file?.name ?? ""}`);
  }
  for (const { name, reason } of plan.skipped) lines.push(`Skipped ${name} (${reason})`);
  lines.push(...rolloutLines(parsed));
  const warnings = Array.isArray(parsed.warnings) ? parsed.warnings : [];
  for (const warning of warnings) lines.push(`Warning: ${String(warning)}`);
  return lines.map(escapeControlCharacters).join("\n");
}
