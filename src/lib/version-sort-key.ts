const numberWidth = 20;

/**
 * A text key whose plain ordering is semver precedence, so that SQL can sort versions and take
 * the newest without reading them all. It uses only 0-9 and a-z, which every collation orders
 * the same way. Layout: major, minor and patch as 20 digits each; then "a" and the prerelease
 * identifiers (numeric: "n" + 20 digits; text: "t" + each byte as two letters g-v, then "0"), or
 * "z" for a release (a release outranks its prereleases); then "1" and the whole version's bytes
 * as letters, which orders versions of equal precedence (differing in build metadata only) by
 * their text. `version` must be strict semver (domain/releases/version.ts normalizeVersion).
 */
export function versionSortKey(version: string): string {
  return `${precedenceKey(version)}1${letters(version)}`;
}

/** Every version of higher precedence than `version` has a sort key above this one. */
export function sortKeyAbove(version: string): string {
  return `${precedenceKey(version)}2`;
}

function precedenceKey(version: string): string {
  const [core = "", ...rest] = version.split("+")[0]?.split("-") ?? [];
  const prerelease = rest.join("-");
  const numbers = core.split(".").map(padded).join("");
  if (prerelease === "") return `${numbers}z`;
  const identifiers = prerelease
    .split(".")
    .map((id) => (/^\d+$/.test(id) ? `n${padded(id)}` : `t${letters(id)}0`));
  return `${numbers}a${identifiers.join("")}`;
}

/** Digits, left-padded to a fixed width (longer numbers than any real version keep their length). */
function padded(digits: string): string {
  return digits.padStart(numberWidth, "0");
}

/** Each byte as two letters g-v (its nibbles): byte order kept, all of them above "0"-"9". */
function letters(text: string): string {
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    out += String.fromCharCode(103 + (byte >> 4), 103 + (byte & 15));
  }
  return out;
}
