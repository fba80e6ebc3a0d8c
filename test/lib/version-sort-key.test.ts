import { describe, expect, it } from "vitest";
import semver from "semver";
import { sortKeyAbove, versionSortKey } from "../../src/lib/version-sort-key.js";

/** The oracle: the semver package's precedence, newest first, ties by the version text. */
function newestFirst(a: string, b: string): number {
  const precedence = semver.compare(b, a);
  if (precedence !== 0) return precedence;
  return a < b ? 1 : a > b ? -1 : 0;
}

const versions = [
  "0.0.1",
  "0.9.0",
  "1.0.0-alpha",
  "1.0.0-alpha.1",
  "1.0.0-alpha.beta",
  "1.0.0-beta",
  "1.0.0-beta.2",
  "1.0.0-beta.11",
  "1.0.0-rc.1",
  "1.0.0-RC.1",
  "1.0.0-rc-1",
  "1.0.0-0",
  "1.0.0-0.3.7",
  "1.0.0-x.7.z.92",
  "1.0.0-x-y-z.--",
  "1.0.0",
  "1.0.0+build.1",
  "1.0.0+build.2",
  "1.0.0+001",
  "1.0.1",
  "1.2.0",
  "1.10.0",
  "1.9.9",
  "2.0.0-alpha+exp.sha.5114f85",
  "2.0.0",
  "10.0.0",
  "1.0.0-9",
  "1.0.0-10",
  "1.0.0-a",
  "1.0.0-a.b",
  "1.0.0-ab",
];

describe("version sort keys", () => {
  it("order versions exactly as semver precedence, ties by the version text", () => {
    const byKey = [...versions].sort((a, b) => {
      const [ka, kb] = [versionSortKey(a), versionSortKey(b)];
      return ka < kb ? 1 : ka > kb ? -1 : 0;
    });
    expect(byKey).toEqual([...versions].sort(newestFirst));
  });

  it("order numbers past what the semver package takes (it throws on them)", () => {
    const huge = "99999999999999999999.0.0";
    expect(versionSortKey(huge) > versionSortKey("10.0.0")).toBe(true);
    expect(versionSortKey(huge) > sortKeyAbove("99999999999999999998.9.9")).toBe(true);
  });

  it("use only 0-9 and a-z, which every collation orders the same way", () => {
    for (const version of versions) expect(versionSortKey(version)).toMatch(/^[0-9a-z]+$/);
  });

  it("sortKeyAbove separates higher precedence from equal or lower", () => {
    for (const current of versions) {
      for (const other of versions) {
        const above = versionSortKey(other) > sortKeyAbove(current);
        expect(above, `${other} above ${current}`).toBe(
          newestFirst(other, current) < 0 && !sameCore(other, current),
        );
      }
    }
  });
});

/** Equal precedence: the same version apart from build metadata. */
function sameCore(a: string, b: string): boolean {
  return a.split("+")[0] === b.split("+")[0];
}
