import { describe, expect, it } from "vitest";
import { licenseSettings } from "../../src/contracts/license-settings.js";
import { settingsFrom } from "../../src/http/dashboard/pages/license-settings-form.js";
import { formOf, settingsInputs } from "../../src/http/dashboard/views/license-settings-form.js";
import type { LicenseView } from "../../src/domain/licenses/license-views.js";

describe("the dashboard's license settings form, from the license settings table", () => {
  const inputs = String(settingsInputs({}, {}));

  it("has a labelled field for every setting the table gives one, of its kind's input", () => {
    const types = { count: "number", time: "datetime-local", list: "text" } as const;
    for (const [name, setting] of Object.entries(licenseSettings)) {
      if (!("form" in setting)) {
        expect(inputs, name).not.toContain(`name="${name}"`);
        continue;
      }
      expect(inputs, name).toContain(`>${setting.label}`);
      if (setting.kind === "text" && setting.format === "lines") {
        expect(inputs, name).toContain(`<textarea name="${name}"`);
      } else {
        const type =
          setting.kind === "text"
            ? setting.format === "email"
              ? "email"
              : "text"
            : types[setting.kind];
        expect(inputs, name).toMatch(new RegExp(`name="${name}"\\s+type="${type}"`));
      }
    }
  });

  it("fills the edit form from a stored license, and reads it back to the same settings", async () => {
    const license = {
      maxMachines: 3,
      expiresAt: "2027-01-31T23:59:00.000Z",
      edition: "pro",
      editionName: null,
      features: ["a", "b"],
      customerName: "Ann",
      customerEmail: null,
      note: null,
      externalId: "order-1",
      maxDeactivationsPer30Days: null,
    } as unknown as LicenseView;
    const form = formOf(license);
    expect(form).toMatchObject({ expiresAt: "2027-01-31T23:59", features: "a, b", note: "" });
    expect(await settingsFrom(form)).toEqual({
      maxMachines: 3,
      expiresAt: Date.parse("2027-01-31T23:59:00Z"),
      edition: "pro",
      editionName: null,
      features: ["a", "b"],
      customerName: "Ann",
      customerEmail: null,
      note: null,
      externalId: "order-1",
      maxDeactivationsPer30Days: null,
    });
  });
});
