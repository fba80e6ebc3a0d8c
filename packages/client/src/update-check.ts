import type {
  CheckForUpdateOptions,
  UpdateArch,
  UpdateInfo,
  UpdatePlatform,
} from "./client-types.js";
import { failure, invalidResponse, isObject, parseJson } from "./answers.js";
import { ShipkeyError } from "./errors.js";
import type { Answer } from "./http.js";
import { isLoopback } from "./options.js";

/** The generic feed's URL for a check: the platform, arch, channel and running version. */
export function latestUrl(base: URL, productSlug: string, options: CheckForUpdateOptions): URL {
  const url = new URL(`api/updates/${encodeURIComponent(productSlug)}/latest`, base);
  url.searchParams.set("platform", updatePlatform(options.platform ?? process.platform));
  url.searchParams.set("arch", updateArch(options.arch ?? process.arch));
  url.searchParams.set("channel", (options.channel ?? "stable").toLowerCase());
  url.searchParams.set("currentVersion", options.currentVersion);
  return url;
}

/** The generic feed's answer: null for 204 (nothing newer), else its release, URL checked. */
export function updateInfo(answer: Answer): UpdateInfo | null {
  if (answer.status === 204) return null;
  const json = parseJson<Record<string, unknown>>(answer.body);
  if (answer.status !== 200) throw failure(answer, json, false);
  if (!isObject(json) || typeof json.version !== "string" || typeof json.url !== "string") {
    throw invalidResponse("the update feed");
  }
  assertSafeDownloadUrl(json.url);
  return json as unknown as UpdateInfo;
}

/** Whether a URL is the server's download redirect (under `/api/downloads/` of the base). */
export function isDownloadRedirect(base: URL, url: string): boolean {
  let target: URL;
  try {
    target = new URL(url, base);
  } catch {
    return false;
  }
  const downloads = new URL("api/downloads/", base);
  return target.origin === downloads.origin && target.pathname.startsWith(downloads.pathname);
}

/** The download URLs the SDK hands out: https, or http on loopback only. */
function assertSafeDownloadUrl(value: string): void {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url?.protocol === "https:" || (url?.protocol === "http:" && isLoopback(url))) return;
  throw new ShipkeyError(
    "UNSAFE_UPDATE_URL",
    `The update feed offers a download URL that is not https (${value.slice(0, 40)}): refused`,
  );
}

function updatePlatform(value: string): UpdatePlatform {
  const names: Record<string, UpdatePlatform> = {
    WINDOWS: "WINDOWS",
    MACOS: "MACOS",
    LINUX: "LINUX",
    win32: "WINDOWS",
    darwin: "MACOS",
    linux: "LINUX",
  };
  const platform = Object.hasOwn(names, value) ? names[value] : undefined;
  if (!platform) throw new TypeError(`No Shipkey platform for ${value}`);
  return platform;
}

function updateArch(value: string): UpdateArch {
  const names: Record<string, UpdateArch> = {
    X64: "X64",
    ARM64: "ARM64",
    x64: "X64",
    arm64: "ARM64",
  };
  const arch = Object.hasOwn(names, value) ? names[value] : undefined;
  if (!arch) throw new TypeError(`No Shipkey arch for ${value}`);
  return arch;
}
