import SwaggerParser from "@apidevtools/swagger-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFixture, type Fixture } from "../helpers/fixture.js";

interface Operation {
  operationId?: string;
  tags?: string[];
  summary?: string;
  security?: Array<Record<string, string[]>>;
  parameters?: Array<{ in: string; name: string; schema?: { type?: unknown } }>;
  responses?: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}

describe("the OpenAPI document is complete and valid", () => {
  let f: Fixture;
  let doc: { paths: Record<string, Record<string, Operation>> };
  let operations: Array<[string, Operation]>;
  beforeAll(async () => {
    f = await createFixture("sqlite");
    doc = (await f.app.inject({ method: "GET", url: "/openapi.json" })).json();
    operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]): [string, Operation] => [`${method} ${path}`, op]),
    );
  });
  afterAll(async () => {
    await f.close();
  });

  it("passes swagger-parser's validation (OpenAPI 3.1 schema and references)", async () => {
    // validate() dereferences in place: give it a copy.
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeDefined();
  });

  it("gives every operation an operationId (unique), a tag and a summary", () => {
    expect(operations.length).toBeGreaterThan(40);
    const ids = operations.map(([, op]) => op.operationId);
    expect(
      operations.filter(([, op]) => !op.operationId || !op.tags?.length || !op.summary),
    ).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("gives every operation its success answer with a schema, and its error answers", () => {
    for (const [name, op] of operations) {
      const statuses = Object.keys(op.responses ?? {});
      const success = statuses.filter((s) => /^[23]\d\d$/.test(s));
      expect(success, name).not.toEqual([]);
      for (const status of success) {
        const content = op.responses?.[status]?.content;
        // 204 and 302 carry no body; every other success answer has a schema.
        if (status !== "204" && status !== "302") {
          expect(Object.values(content ?? {})[0]?.schema, `${name} ${status}`).toBeDefined();
        }
      }
      expect(statuses.filter((s) => /^[45]/.test(s)).length, name).toBeGreaterThan(1);
    }
  });

  it("names the scope in the security requirement of every operation that needs a key", () => {
    for (const [name, op] of operations) {
      if (!name.includes("/api/admin/") && !name.endsWith("/api/releases/publish")) continue;
      const scopes = op.security?.[0]?.apiKey ?? [];
      expect(scopes.length, name).toBe(1);
      expect(scopes[0], name).toMatch(/^[a-z-]+:(read|write)$/);
    }
  });

  it("types every query and path parameter, and leaves the dashboard out", () => {
    for (const [name, op] of operations) {
      for (const parameter of op.parameters ?? []) {
        expect(parameter.schema?.type, `${name} ${parameter.name}`).toBeDefined();
      }
    }
    expect(Object.keys(doc.paths).filter((p) => p.startsWith("/admin"))).toEqual([]);
  });

  it("declares formats on timestamps and URLs", () => {
    const license = doc.paths["/api/admin/licenses/{licenseKey}"]?.get?.responses?.["200"];
    const schema = license?.content?.["application/json"]?.schema as {
      properties: Record<string, { format?: string }>;
    };
    expect(schema.properties.createdAt?.format).toBe("date-time");
    const latest = doc.paths["/api/updates/{productSlug}/latest"]?.get?.responses?.["200"];
    const feed = latest?.content?.["application/json"]?.schema as {
      properties: Record<string, { format?: string }>;
    };
    expect(feed.properties.url?.format).toBe("uri");
  });
});
