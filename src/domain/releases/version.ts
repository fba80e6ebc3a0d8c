// The regular expression published with Semantic Versioning 2.0.0 (semver.org), verbatim. The
// `semver` package's valid() is lenient (accepts "=1.0.0", " 1.0.0") and drops build metadata,
// which is part of a version's identity here, so it is not used for this check.
const semver200 =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

/**
 * Strips exactly one leading "v" and returns the version if what remains is strict semver 2.0.0,
 * else null. The result (build metadata included) is the version's identity.
 */
export function normalizeVersion(raw: string): string | null {
  const version = raw.startsWith("v") ? raw.slice(1) : raw;
  return semver200.test(version) ? version : null;
}

/**
 * The app's version an SDK reports (appVersion, as the request reader read it: a string of at
 * most limits.appVersion characters, else absent): the version, or null when absent or not semver.
 */
export const reportedVersion = (reported: string | null | undefined): string | null =>
  reported === undefined || reported === null ? null : normalizeVersion(reported);

/**
 * The version Sparkle compares (`sparkle:version`, which the app's `CFBundleVersion` must equal):
 * the version without its build metadata and without the hyphens of its prerelease, so
 * `1.2.0-beta.1` is `1.2.0beta.1`. Sparkle's comparator (SUStandardVersionComparator) ignores
 * everything from the first "-" on, so `1.2.0-beta.1` and `1.2.0` would compare equal; without
 * the hyphen, the letters after the patch make it older than `1.2.0` and its numbers order the
 * betas. Faithful to semver precedence when the prerelease starts with letters and keeps letters
 * and numbers apart by dots (`beta.2`, `rc.1`), docs/update-feeds.md.
 */
export function sparkleVersion(version: string): string {
  const [withoutBuild = version] = version.split("+");
  const dash = withoutBuild.indexOf("-");
  if (dash === -1) return withoutBuild;
  return withoutBuild.slice(0, dash) + withoutBuild.slice(dash + 1).replaceAll("-", "");
}
