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
