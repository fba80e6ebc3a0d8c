import { describe, expect, it } from "vitest";
import { licenseSettings } from "../../src/contracts/license-settings.js";
import { productSettings } from "../../src/contracts/product-settings.js";
import { licenseSettingsErrors } from "../../src/domain/licenses/manage-licenses.js";
import { settingErrors } from "../../src/domain/settings.js";
import type { ShipkeyError } from "../../src/errors.js";

const refusals = (errors: ShipkeyError[]) =>
  errors.map((e) => ({ field: e.details.field, code: e.code, error: e.message }));

describe("a license's settings, checked from the settings table", () => {
  it.each([
    [{ status: "active" as never }, "status", "status must be one of ACTIVE, SUSPENDED, REVOKED"],
    [{ maxMachines: -1 }, "maxMachines", "maxMachines must be an integer from 0 to 2147483647"],
    [{ maxMachines: 1.5 }, "maxMachines", "maxMachines must be an integer from 0 to 2147483647"],
    [
      { maxDeactivationsPer30Days: 10_001 },
      "maxDeactivationsPer30Days",
      "maxDeactivationsPer30Days must be a whole number from 0 to 10000, or null",
    ],
    [{ edition: "x".repeat(256) }, "edition", "edition must be at most 255 characters"],
    [{ features: Array(101).fill("f") }, "features", "at most 100 features"],
    [{ features: ["a", ""] }, "features[1]", "features must not be empty"],
    [{ features: ["x".repeat(256)] }, "features[0]", "feature must be at most 255 characters"],
    [{ customerEmail: "not an email" }, "customerEmail", "customerEmail must be an email address"],
    [{ customerName: "a\nb" }, "customerName", "customerName must not contain control characters"],
    [
      { note: "bell\u0007" },
      "note",
      "note must not contain control characters other than tabs and line breaks",
    ],
  ])("%j is refused naming %s", (settings, field, error) => {
    expect(refusals(licenseSettingsErrors(settings))[0]).toMatchObject({ field, error });
  });

  it("accepts nulls, empty texts and the empty list, and checks nothing not given", () => {
    expect(
      licenseSettingsErrors({
        expiresAt: null,
        edition: "",
        customerEmail: "",
        features: [],
        maxDeactivationsPer30Days: null,
        note: "line one\r\n\tline two",
      }),
    ).toEqual([]);
    expect(licenseSettingsErrors({})).toEqual([]);
  });

  it("reports in passes: ranges, lengths, email addresses, then control characters", () => {
    const all = licenseSettingsErrors({
      note: "\u0007",
      customerEmail: "bad",
      features: ["\n"],
      customerName: "\n",
      edition: "x".repeat(256),
      maxMachines: -1,
    });
    expect(all.map((e) => e.details.field)).toEqual([
      "maxMachines",
      "edition",
      "customerEmail",
      "customerName",
      "features[0]",
      "note",
    ]);
  });

  it("control characters: one-line texts first, then the features, then the note", () => {
    const first = (settings: Parameters<typeof licenseSettingsErrors>[0]) =>
      licenseSettingsErrors(settings)[0]?.details.field;
    expect(first({ features: ["\n"], customerName: "\n" })).toBe("customerName");
    expect(first({ note: "\u0007", externalId: "\n" })).toBe("externalId");
    expect(first({ customerName: "\n", customerEmail: "\n" })).toBe("customerEmail");
  });

  it("every setting has its CLI option, and every one but the status a form field", () => {
    for (const [name, setting] of Object.entries(licenseSettings)) {
      expect(setting.cli, name).toBeDefined();
      expect(setting.label, name).toBeDefined();
      expect("form" in setting, name).toBe(name !== "status");
    }
  });
});

describe("a product's offline and seat settings, checked from the settings table", () => {
  it.each([
    [
      { offlinePeriodSeconds: 59 },
      "offlinePeriodSeconds must be a whole number from 60 to 7776000 (90 days)",
    ],
    [{ offlineAllowance: 101 }, "offlineAllowance must be a whole number from 0 to 100"],
    [
      { maxDeactivationsPer30Days: -1 },
      "maxDeactivationsPer30Days must be a whole number from 0 to 10000, or null",
    ],
    [{ machineLeaseDays: 0 }, "machineLeaseDays must be a whole number from 1 to 3650, or null"],
  ])("%j: %s", (values, error) => {
    expect(refusals(settingErrors(productSettings, values))).toEqual([
      { field: Object.keys(values)[0], code: "INVALID_FIELD_VALUE", error },
    ]);
  });

  it("null switches a limit or the lease off; the period and the allowance take no null", () => {
    expect(
      settingErrors(productSettings, { maxDeactivationsPer30Days: null, machineLeaseDays: null }),
    ).toEqual([]);
    expect(settingErrors(productSettings, { offlineAllowance: null as never })).toHaveLength(1);
  });
});
