import { describe, expect, it } from "vitest";
import { newId, newLicenseKey, randomBase32 } from "../../src/lib/ids.js";

describe("random ids", () => {
  it("never repeat across many draws, including past pool refills", () => {
    const ids = Array.from({ length: 5000 }, () => newId("act"));
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^act_[0-9A-HJKMNP-TV-Z]{22}$/);
  });

  it("sort by creation time, so new rows append to the primary-key index", () => {
    const earlier = newId("act", Date.UTC(2026, 10, 22, 4, 0, 0, 0));
    const later = newId("act", Date.UTC(2026, 10, 22, 4, 0, 0, 1));
    const muchLater = newId("act", Date.UTC(2127, 0, 1));
    expect([muchLater, later, earlier].sort()).toEqual([earlier, later, muchLater]);
    expect(earlier.slice(4, 14)).toBe(newId("act", Date.UTC(2026, 10, 22, 4)).slice(4, 14));
  });

  it("made in one millisecond, sort in the order they were made", () => {
    const at = Date.UTC(2026, 10, 27, 1, 0, 0, 0);
    const ids = Array.from({ length: 1000 }, () => newId("aud", at));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    // Another millisecond starts from a random value again.
    const next = newId("aud", at + 1);
    expect(next > (ids.at(-1) ?? "")).toBe(true);
  });

  it("use every Crockford base32 character and nothing else", () => {
    const seen = new Set(randomBase32(4000));
    expect([...seen].sort().join("")).toBe("0123456789ABCDEFGHJKMNPQRSTVWXYZ");
  });

  it("format license keys as 5 groups of 5", () => {
    expect(newLicenseKey()).toMatch(/^([0-9A-HJKMNP-TV-Z]{5}-){4}[0-9A-HJKMNP-TV-Z]{5}$/);
  });

  it("refuse a length larger than the random pool", () => {
    expect(() => randomBase32(5000)).toThrow(RangeError);
  });
});
