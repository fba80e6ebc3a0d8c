import { Value } from "typebox/value";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { activate } from "../../src/contracts/license-api.js";
import { operationExamples } from "../../src/http/openapi-examples.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

interface Media {
  schema: unknown;
  examples?: Record<string, { summary?: string; value: unknown }>;
}

describe("OpenAPI document and viewer", () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture("sqlite");
  });
  afterAll(async () => {
    await f.close();
  });

  it("GET /openapi.json is OpenAPI 3.1 with every public and admin route", async () => {
    const response = await f.app.inject({ method: "GET", url: "/openapi.json" });
    expect(response.statusCode).toBe(200);
    const doc = response.json();
    expect(doc.openapi).toBe("3.1.0");
    const paths = Object.keys(doc.paths);
    for (const path of [
      "/api/releases/publish",
      "/api/license/activate",
      "/api/license/validate",
      "/api/license/deactivate",
      "/api/admin/products",
      "/api/admin/products/{slug}",
      "/api/admin/licenses",
      "/api/admin/licenses/{licenseKey}",
      "/api/admin/licenses/{licenseKey}/suspend",
      "/api/admin/licenses/{licenseKey}/machines/{machineId}",
      "/api/admin/products/{slug}/releases/{version}/{platform}/{arch}",
      "/api/admin/api-keys",
      "/api/admin/audit",
      "/api/admin/products/{slug}/releases/{version}/yank",
      "/api/admin/products/{slug}/releases/{version}/unyank",
      "/api/updates/{productSlug}/tauri/{target}/{arch}/{currentVersion}",
      "/api/updates/{productSlug}/squirrel-mac/{arch}/{currentVersion}",
      "/api/updates/{productSlug}/electron/{file}",
      "/api/updates/{productSlug}/sparkle/{platform}/{arch}/appcast.xml",
      "/api/updates/{productSlug}/latest",
    ]) {
      expect(paths).toContain(path);
    }
    expect(paths.some((p) => p.startsWith("/docs"))).toBe(false);
  });

  it("declares the bearer API-key scheme, naming the scope, on publish and admin routes, not on the license endpoints", async () => {
    const doc = (await f.app.inject({ method: "GET", url: "/openapi.json" })).json();
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.paths["/api/releases/publish"].post.security).toEqual([
      { apiKey: ["releases:write"] },
    ]);
    expect(doc.paths["/api/admin/licenses"].post.security).toEqual([
      { apiKey: ["licenses:write"] },
    ]);
    expect(doc.paths["/api/license/validate"].post.security).toBeUndefined();
  });

  it("documents request schemas (the admin ones are the validators) and the failure shape", async () => {
    const doc = (await f.app.inject({ method: "GET", url: "/openapi.json" })).json();
    const createLicense = doc.paths["/api/admin/licenses"].post;
    const body = createLicense.requestBody.content["application/json"].schema;
    expect(body.required).toEqual(["productSlug", "maxMachines"]);
    expect(body.properties.maxMachines).toMatchObject({ type: "integer", minimum: 0 });
    expect(body.properties.externalId).toMatchObject({ type: ["string", "null"], maxLength: 255 });
    const listQuery = doc.paths["/api/admin/licenses"].get.parameters;
    expect(listQuery.map((p: { name: string }) => p.name)).toContain("externalId");
    const headers = createLicense.parameters.filter((p: { in: string }) => p.in === "header");
    expect(headers.map((p: { name: string }) => p.name)).toEqual(["idempotency-key"]);
    const validateFailure =
      doc.paths["/api/license/validate"].post.responses["4XX"].content["application/json"].schema;
    expect(Object.keys(validateFailure.properties)).toEqual([
      "error",
      "code",
      "valid",
      "canActivate",
      "field",
      "fields",
    ]);
  });

  it("documents the failure shape on admin routes too", async () => {
    const doc = (await f.app.inject({ method: "GET", url: "/openapi.json" })).json();
    const failure =
      doc.paths["/api/admin/licenses/{licenseKey}"].get.responses["4XX"].content["application/json"]
        .schema;
    expect(failure.required).toEqual(["error", "code"]);
  });

  it("documents the update feeds as public reads with their parameters and answers", async () => {
    const doc = (await f.app.inject({ method: "GET", url: "/openapi.json" })).json();
    const tauri =
      doc.paths["/api/updates/{productSlug}/tauri/{target}/{arch}/{currentVersion}"].get;
    expect(tauri.security).toBeUndefined();
    expect(tauri.parameters.map((p: { name: string }) => p.name).sort()).toEqual([
      "arch",
      "bundle",
      "channel",
      "currentVersion",
      "licenseKey",
      "machineId",
      "productSlug",
      "target",
    ]);
    expect(Object.keys(tauri.responses)).toEqual(expect.arrayContaining(["200", "204", "4XX"]));
    const download = doc.paths["/api/downloads/{productSlug}/{version}/{platform}/{arch}"].get;
    expect(download.security).toBeUndefined();
    expect(Object.keys(download.responses)).toEqual(expect.arrayContaining(["302", "4XX"]));
    const latest = doc.paths["/api/updates/{productSlug}/latest"].get;
    expect(
      Object.keys(latest.responses["200"].content["application/json"].schema.properties),
    ).toEqual([
      "version",
      "channel",
      "notes",
      "pubDate",
      "url",
      "signature",
      "sha512",
      "fileSize",
      "critical",
    ]);
  });

  it("shows every example on its operation, each one valid against the schema beside it", async () => {
    const doc = (await f.app.inject({ method: "GET", url: "/openapi.json" })).json();
    const mismatches: string[] = [];
    const check = (where: string, media: Media | undefined, names: string[]) => {
      expect(Object.keys(media?.examples ?? {}), where).toEqual(names);
      for (const [name, example] of Object.entries(media?.examples ?? {})) {
        expect(example.summary, `${where} ${name}`).toBeTruthy();
        if (!Value.Check(media?.schema as never, example.value)) {
          const errors = [...Value.Errors(media?.schema as never, example.value)];
          mismatches.push(`${where} ${name}: ${JSON.stringify(errors.slice(0, 3))}`);
        }
      }
    };
    for (const [url, examples] of Object.entries(operationExamples)) {
      const operation = doc.paths[url.replace(/:(\w+)/g, "{$1}")]?.post;
      expect(operation, url).toBeDefined();
      if (examples.request) {
        const media = operation.requestBody.content["application/json"];
        check(`${url} request`, media, Object.keys(examples.request));
      }
      for (const [status, named] of Object.entries(examples.answers)) {
        const media = operation.responses[status]?.content?.["application/json"];
        check(`${url} ${status}`, media, Object.keys(named));
      }
    }
    expect(mismatches).toEqual([]);
    // The document's copies carry them; the schemas the routes validate and serialize with do not.
    expect(Object.keys(activate.schema.body)).not.toContain("x-examples");
    expect(Object.keys(activate.schema.response[200])).not.toContain("x-examples");
  });

  it("/docs and the document carry the product's name", async () => {
    const doc = (await f.app.inject({ method: "GET", url: "/openapi.json" })).json();
    expect(doc.info.title).toBe("Shipkey");
    expect(doc.info.description).toMatch(/^Shipkey, self-hosted release publishing/);
    const page = await f.app.inject({ method: "GET", url: "/docs/" });
    expect(page.body).toContain("<title>Shipkey API</title>");
    const initializer = await f.app.inject({
      method: "GET",
      url: "/docs/static/swagger-initializer.js",
    });
    expect(initializer.statusCode).toBe(200);
    const logo = /data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)/.exec(initializer.body)?.[1] ?? "";
    expect(Buffer.from(logo, "base64").toString()).toContain(">Shipkey API</text>");
  });

  it("/docs renders the viewer from the service's own assets, with no external URL", async () => {
    const page = await f.app.inject({ method: "GET", url: "/docs/" });
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toMatch(/text\/html/);
    expect(page.body).not.toMatch(/https?:\/\/(?!127\.0\.0\.1|localhost)/);
    const scripts = [...page.body.matchAll(/src="\.?\/?([^"]+\.js)"/g)].map((m) => m[1]);
    expect(scripts.length).toBeGreaterThan(0);
    for (const script of scripts) {
      const asset = await f.app.inject({ method: "GET", url: `/docs/${script}` });
      expect(asset.statusCode).toBe(200);
    }
  });
});
