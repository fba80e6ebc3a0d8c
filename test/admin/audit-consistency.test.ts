import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditEntry } from "../../src/domain/audit/audit-log.js";
import { dialects } from "../helpers/database.js";
import { adminAccess } from "../helpers/admin-access.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

// The admin API and the dashboard perform the same audited actions (src/actions/):
// an audit log must not depend on which of the two an admin used.
describe.each(dialects)("audit entries from the admin API and the dashboard (%s)", (dialect) => {
  let f: Fixture;
  let apiKey: string;
  let cookie: string;
  let csrf: string;
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ apiKey, cookie, csrf } = await adminAccess(f, "audit@example.com"));
  });
  afterAll(async () => {
    await f.close();
  });

  const viaApi = async (method: "POST" | "PATCH", url: string, body: object) => {
    const response = await f.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      payload: JSON.stringify(body),
    });
    expect(response.statusCode).toBeLessThan(300);
  };
  const viaDashboard = async (url: string, fields: Record<string, string>) => {
    const response = await f.app.inject({
      method: "POST",
      url,
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString(),
    });
    // Post/redirect/get: every dashboard write answers 303 (a new key's secret follows in a flash).
    expect(response.statusCode).toBe(303);
  };
  const latestEntries = async (count: number): Promise<AuditEntry[]> => {
    const response = await f.app.inject({
      method: "GET",
      url: `/api/admin/audit?limit=${count}`,
      headers: { authorization: `Bearer ${apiKey}` },
    });
    return (response.json() as { items: AuditEntry[] }).items;
  };
  const shape = (entry: AuditEntry | undefined) => ({
    action: entry?.action,
    targetType: entry?.target.type,
    detailFields: Object.keys(entry?.details ?? {}).sort(),
  });

  it("creating an API key records the same fields, and never the secret", async () => {
    await viaApi("POST", "/api/admin/api-keys", { name: "ci-api", scopes: ["releases:write"] });
    await viaDashboard("/admin/api-keys", { name: "ci-dashboard", scopes: "releases:write" });
    const [fromDashboard, fromApi] = await latestEntries(2);
    expect(shape(fromApi)).toEqual({
      action: "api_key.create",
      targetType: "api_key",
      detailFields: ["displayPrefix", "name", "products", "scopes"],
    });
    expect(shape(fromDashboard)).toEqual(shape(fromApi));
    expect(JSON.stringify([fromApi, fromDashboard])).not.toMatch(/shk_[A-Za-z0-9_-]{20,}/);
  });

  it("creating, editing and suspending a license records the same entries", async () => {
    await viaApi("POST", "/api/admin/licenses", {
      productSlug: f.product.slug,
      maxMachines: 2,
      licenseKey: "AUDIT-API-LICENSE-1",
    });
    await viaDashboard("/admin/licenses", {
      productSlug: f.product.slug,
      maxMachines: "2",
      licenseKey: "AUDIT-DASH-LICENSE-1",
    });
    const [fromDashboard, fromApi] = await latestEntries(2);
    expect(shape(fromApi)).toEqual({
      action: "license.create",
      targetType: "license",
      detailFields: ["licenseKey", "maxMachines", "product", "status"],
    });
    expect(shape(fromDashboard)).toEqual(shape(fromApi));

    // The dashboard's edit form sends every field; only what differs counts as changed.
    await viaApi("PATCH", "/api/admin/licenses/AUDIT-API-LICENSE-1", {
      note: "renewed",
      maxMachines: 2,
    });
    await viaDashboard("/admin/licenses/AUDIT-DASH-LICENSE-1/edit", {
      maxMachines: "2",
      expiresAt: "",
      edition: "",
      editionName: "",
      features: "",
      customerName: "",
      customerEmail: "",
      note: "renewed",
    });
    const [updatedFromDashboard, updatedFromApi] = await latestEntries(2);
    expect(updatedFromApi?.action).toBe("license.update");
    // With the old and new value of each changed setting.
    const noteChange = {
      licenseKey: "…SE-1",
      changed: ["note"],
      changes: { note: { from: null, to: "renewed" } },
    };
    expect(updatedFromApi?.details).toEqual(noteChange);
    expect(updatedFromDashboard?.action).toBe("license.update");
    expect(updatedFromDashboard?.details).toEqual(noteChange);

    await viaApi("POST", "/api/admin/licenses/AUDIT-API-LICENSE-1/suspend", {});
    await viaDashboard("/admin/licenses/AUDIT-DASH-LICENSE-1/status", { status: "SUSPENDED" });
    const [suspendedFromDashboard, suspendedFromApi] = await latestEntries(2);
    expect(shape(suspendedFromApi).action).toBe("license.suspend");
    expect(shape(suspendedFromDashboard)).toEqual(shape(suspendedFromApi));
  });
});
