import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../src/lib/ids.js";
import { dialects } from "../helpers/database.js";
import { adminAccess } from "../helpers/admin-access.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

/**
 * One of each kind of refused character: C0, DEL, C1, the Unicode separators, and the
 * bidirectional overrides and isolates.
 */
const controls = [
  ["ESC", "\u001b[31m"],
  ["a line feed", "\n"],
  ["a tab", "\t"],
  ["DEL", "\u007f"],
  ["C1 NEL", "\u0085"],
  ["C1 CSI", "\u009b"],
  ["U+2028", "\u2028"],
  ["U+2029", "\u2029"],
  ["a right-to-left override (U+202E)", "\u202e"],
  ["a left-to-right embedding (U+202A)", "\u202a"],
  ["a first-strong isolate (U+2068)", "\u2068"],
  ["a pop-directional isolate (U+2069)", "\u2069"],
] as const;

describe.each(dialects)("hostile text is refused or neutralised (%s)", (dialect) => {
  let f: Fixture;
  let access: { apiKey: string; cookie: string; csrf: string };
  beforeAll(async () => {
    f = await createFixture(dialect);
    access = await adminAccess(f, "text@example.com");
  });
  afterAll(async () => {
    await f.close();
  });

  const admin = (method: "POST" | "PATCH", url: string, body: unknown) =>
    f.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${access.apiKey}`, "content-type": "application/json" },
      payload: JSON.stringify(body),
    });

  const activate = (body: Record<string, unknown>) => f.post("/api/license/activate", body);

  describe("activate: machineName and platform", () => {
    it.each(
      controls.flatMap(([label, c]) => [
        ["machineName", label, c],
        ["platform", label, c],
      ]),
    )("%s with %s is a 400 naming the field, and nothing is stored", async (field, _l, c) => {
      const licenseKey = await f.createLicense();
      const response = await activate({
        licenseKey,
        machineId: "m-1",
        productSlug: f.product.slug,
        [field]: `Office PC${c}`,
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        success: false,
        error: `${field} must not contain control characters`,
        code: "INVALID_FIELD_VALUE",
        field,
      });
      const rows = await f.db
        .selectFrom("activations")
        .innerJoin("licenses", "licenses.id", "activations.license_id")
        .select("activations.id")
        .where("licenses.license_key", "=", licenseKey)
        .execute();
      expect(rows).toEqual([]);
    });

    it("the spec's checks come first: missing fields, then an unknown license", async () => {
      const hostile = { machineName: "\u001b]0;pwned\u0007", platform: "\u2028" };
      const missing = await activate({ licenseKey: "x", productSlug: f.product.slug, ...hostile });
      expect(missing.json().code).toBe("MISSING_REQUIRED_FIELDS");
      const unknown = await activate({
        licenseKey: "NO-SUCH-LICENSE-KEY",
        machineId: "m",
        productSlug: f.product.slug,
        ...hostile,
      });
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json().code).toBe("LICENSE_NOT_FOUND");
    });

    it("printable Unicode is kept as sent", async () => {
      const licenseKey = await f.createLicense();
      const response = await activate({
        licenseKey,
        machineId: "m-uni",
        productSlug: f.product.slug,
        machineName: "Zoë's MacBook — 東京 🚀",
        platform: "macOS 15.1",
      });
      expect(response.statusCode).toBe(200);
      expect(response.json().activation.machineName).toBe("Zoë's MacBook — 東京 🚀");
    });
  });

  describe("admin-entered names and notes (admin API, dashboard, CLI share the domain)", () => {
    it.each([
      ["POST", "/api/admin/products", { slug: "esc-app", name: "Evil\u001b[2J" }, "name"],
      ["PATCH", "/api/admin/products/desktop-app", { name: "Line\u2028Break" }, "name"],
      ["POST", "/api/admin/api-keys", { name: "ci\u0085", scopes: ["audit:read"] }, "name"],
      [
        "POST",
        "/api/admin/licenses",
        { productSlug: "desktop-app", maxMachines: 1, customerName: "Grace\nHopper" },
        "customerName",
      ],
      [
        "POST",
        "/api/admin/licenses",
        { productSlug: "desktop-app", maxMachines: 1, customerEmail: "a\u001b@example.com" },
        "customerEmail",
      ],
      [
        "POST",
        "/api/admin/licenses",
        { productSlug: "desktop-app", maxMachines: 1, edition: "pro\t" },
        "edition",
      ],
      [
        "POST",
        "/api/admin/licenses",
        { productSlug: "desktop-app", maxMachines: 1, editionName: "Pro\u009b" },
        "editionName",
      ],
      [
        "POST",
        "/api/admin/licenses",
        { productSlug: "desktop-app", maxMachines: 1, features: ["sync", "ex\u007fport"] },
        "features",
        "features[1]",
      ],
    ] as const)("%s %s %j is a 400 naming %s", async (method, url, body, field, path?: string) => {
      const response = await admin(method, url, body);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        error: `${field} must not contain control characters`,
        code: "INVALID_FIELD_VALUE",
        field: path ?? field,
      });
    });

    it("a note may hold tabs and line breaks, but no other control character", async () => {
      const kept = await admin("POST", "/api/admin/licenses", {
        productSlug: "desktop-app",
        maxMachines: 1,
        note: "line one\r\n\tline two\nline three",
      });
      expect(kept.statusCode).toBe(201);
      expect(kept.json().note).toBe("line one\r\n\tline two\nline three");
      const refused = await admin("PATCH", `/api/admin/licenses/${kept.json().licenseKey}`, {
        note: "bell\u0007",
      });
      expect(refused.statusCode).toBe(400);
      expect(refused.json()).toEqual({
        error: "note must not contain control characters other than tabs and line breaks",
        code: "INVALID_FIELD_VALUE",
        field: "note",
      });
    });

    it("the dashboard's product form refuses a name with a control character", async () => {
      const response = await f.app.inject({
        method: "POST",
        url: "/admin/products",
        headers: { cookie: access.cookie, "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams({
          _csrf: access.csrf,
          slug: "dash-esc",
          name: "Evil\u001b[2J",
        }).toString(),
      });
      expect(response.statusCode).toBe(400);
      expect(response.body).toContain("name must not contain control characters");
      const stored = await f.db
        .selectFrom("products")
        .select("id")
        .where("slug", "=", "dash-esc")
        .executeTakeFirst();
      expect(stored).toBeUndefined();
    });
  });

  describe("given license keys", () => {
    it("a given key shorter than 16 characters is a 400 naming the field", async () => {
      const response = await admin("POST", "/api/admin/licenses", {
        productSlug: "desktop-app",
        maxMachines: 1,
        licenseKey: "SHORT-KEY-12345",
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        error: "licenseKey must be at least 16 characters",
        code: "INVALID_FIELD_VALUE",
        field: "licenseKey",
      });
    });

    it("a given key of 16 characters and a generated key are accepted", async () => {
      const given = await admin("POST", "/api/admin/licenses", {
        productSlug: "desktop-app",
        maxMachines: 1,
        licenseKey: "GIVEN-KEY-123456",
      });
      expect(given.statusCode).toBe(201);
      expect(given.json().licenseKey).toBe("GIVEN-KEY-123456");
      const generated = await admin("POST", "/api/admin/licenses", {
        productSlug: "desktop-app",
        maxMachines: 1,
      });
      expect(generated.statusCode).toBe(201);
    });

    it("an existing short key keeps working for activate and validate", async () => {
      const now = Date.now();
      await f.db
        .insertInto("licenses")
        .values({
          id: newId("lic"),
          license_key: "OLD-1",
          product_id: f.product.id,
          status: "ACTIVE",
          expires_at: null,
          edition: null,
          edition_name: null,
          features: "[]",
          max_machines: 1,
          active_machines: 0,
          customer_name: null,
          customer_email: null,
          note: null,
          created_at: now,
          updated_at: now,
        })
        .execute();
      const body = { licenseKey: "OLD-1", machineId: "legacy", productSlug: f.product.slug };
      expect((await f.post("/api/license/activate", body)).statusCode).toBe(200);
      expect((await f.post("/api/license/validate", body)).json()).toMatchObject({ valid: true });
    });
  });

  describe("publish: releaseNotes", () => {
    const publishNotes = (version: string, releaseNotes: string) =>
      f.post(
        "/api/releases/publish",
        {
          productSlug: f.product.slug,
          version,
          channel: "STABLE",
          releaseNotes,
          releases: [{ platform: "LINUX", arch: "X64", downloadUrl: "https://x.example.com/a" }],
        },
        { authorization: `Bearer ${f.publishKey}` },
      );

    it("are a changelog as CI writes it, kept as sent: line breaks, tabs, right-to-left text", async () => {
      for (const [version, notes] of [
        ["8.0.0", "# 8.0.0\r\n\n- fixed\tthings"],
        ["8.0.1", "- \u2067עברית\u2069 support, C1 \u0085 kept"],
      ] as const) {
        expect((await publishNotes(version, notes)).statusCode).toBe(200);
        const stored = await f.db
          .selectFrom("release_versions")
          .select("release_notes")
          .where("version", "=", version)
          .executeTakeFirstOrThrow();
        expect(stored.release_notes).toBe(notes);
      }
    });

    it.each([
      ["ESC (colour codes)", "\u001b[31mred\u001b[0m"],
      ["BEL", "done\u0007"],
      ["DEL", "x\u007f"],
      ["NUL", "a\u0000b"],
    ])(
      "refuse C0 controls other than tabs and line breaks (%s), and publish nothing",
      async (_l, notes) => {
        const response = await publishNotes("8.1.0", notes);
        expect(response.statusCode).toBe(400);
        expect(response.json()).toMatchObject({ code: "INVALID_FIELD_VALUE" });
        const stored = await f.db
          .selectFrom("release_versions")
          .select("id")
          .where("version", "=", "8.1.0")
          .execute();
        expect(stored).toEqual([]);
      },
    );
  });

  describe("publish: downloadUrl", () => {
    let published = 0;
    const publish = (version: string, downloadUrl: string) =>
      f.post(
        "/api/releases/publish",
        {
          productSlug: f.product.slug,
          version,
          channel: "STABLE",
          releases: [{ platform: "LINUX", arch: "X64", downloadUrl }],
        },
        { authorization: `Bearer ${f.publishKey}` },
      );

    it.each([
      ["user and password", "https://ci:s3cret@downloads.example.com/app.tar.gz"],
      ["user only", "https://token@downloads.example.com/app.tar.gz"],
      ["password only", "https://:s3cret@downloads.example.com/app.tar.gz"],
    ])("a URL with embedded credentials (%s) is 'Invalid download URL'", async (_l, url) => {
      const response = await publish("9.0.0", url);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        error: "Invalid download URL",
        code: "INVALID_DOWNLOAD_URL",
        field: "releases[0].downloadUrl",
      });
    });

    it.each([
      [
        "https://DOWNLOADS.Example.COM:443/app/../app-1.0.tar.gz",
        "https://downloads.example.com/app-1.0.tar.gz",
      ],
      ["https://downloads.example.com", "https://downloads.example.com/"],
      [
        "https://bücher.example/Zoë 1.0.tar.gz".replace(" ", "%20"),
        "https://xn--bcher-kva.example/Zo%C3%AB%201.0.tar.gz",
      ],
    ])("%s is stored normalised as %s", async (sent, stored) => {
      const version = `9.1.${++published}`;
      expect((await publish(version, sent)).statusCode).toBe(200);
      const row = await f.db
        .selectFrom("release_artifacts")
        .innerJoin("release_versions", "release_versions.id", "release_artifacts.version_id")
        .select("download_url")
        .where("release_versions.version", "=", version)
        .executeTakeFirstOrThrow();
      expect(row.download_url).toBe(stored);
    });
  });
});
