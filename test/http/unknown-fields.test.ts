import { describe, expect, it } from "vitest";
import { closestField } from "../../src/http/unknown-fields.js";

// The known field an unknown one is taken to mean: a synonym's where that field is known, else
// the nearest by edit distance (ignoring case) when it is close enough for the name's length.
describe("closestField", () => {
  const publish = ["productSlug", "version", "channel", "releaseNotes", "releases"];
  const entry = ["platform", "arch", "downloadUrl", "signature", "fileSize", "sha512"];

  it.each([
    ["notes", publish, "releaseNotes"],
    ["Notes", publish, "releaseNotes"],
    ["product", publish, "productSlug"],
    ["slug", publish, "productSlug"],
    ["sha256", entry, "sha512"],
    ["size", entry, "fileSize"],
    ["url", entry, "downloadUrl"],
    ["os", entry, "platform"],
    ["architecture", entry, "arch"],
    ["key", ["licenseKey", "machineId"], "licenseKey"],
    ["machine", ["licenseKey", "machineId"], "machineId"],
  ])("%s is a synonym of a known field", (name, known, meant) => {
    expect(closestField(name, known)).toBe(meant);
  });

  it("a synonym whose field is not known suggests nothing of its own", () => {
    expect(closestField("url", ["url", "events"])).toBe("url");
    expect(closestField("notes", ["name", "slug"])).toBeUndefined();
  });

  it.each([
    ["file_size", entry, "fileSize"],
    ["downloadURL", entry, "downloadUrl"],
    ["verison", publish, "version"],
    ["chanel", publish, "channel"],
    ["maxMachine", ["productSlug", "maxMachines"], "maxMachines"],
    ["arc", entry, "arch"],
  ])("%s is within the distance allowed", (name, known, meant) => {
    expect(closestField(name, known)).toBe(meant);
  });

  it.each([
    ["checksum", entry],
    ["colour", ["slug", "name"]],
    ["ab", ["arch"]],
    ["constructor", publish],
    ["__proto__", publish],
    ["x".repeat(10_000), ["x".repeat(9_999)]],
  ])("%s is close to nothing", (name, known) => {
    expect(closestField(name, known)).toBeUndefined();
  });

  it("a name of one or two characters matches only in another case", () => {
    expect(closestField("Q", ["q"])).toBe("q");
    expect(closestField("p", ["q"])).toBeUndefined();
  });
});
