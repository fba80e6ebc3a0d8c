/** The server option as a base URL: https, or http on loopback only. */
export function serverUrl(server: string | URL): URL {
  const url = new URL(server);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopback(url))) {
    throw new TypeError("server must be an https URL (http only for localhost)");
  }
  if (!url.pathname.endsWith("/")) url.pathname += "/";
  url.search = "";
  url.hash = "";
  return url;
}

export function isLoopback(url: URL): boolean {
  return ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
}

// Semantic Versioning 2.0.0's published regular expression; a leading "v" is allowed.
const semver =
  /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

/** The appVersion option, checked: the server ignores a version that is not semver. */
export function appVersion(value: unknown): string {
  if (typeof value !== "string" || value.length > 128 || !semver.test(value)) {
    throw new TypeError("appVersion must be a semver version (e.g. 1.4.2), at most 128 characters");
  }
  return value;
}
