import ajvCompiler from "@fastify/ajv-compiler";
import serializerCompiler from "@fastify/fast-json-stringify-compiler";
import type { TSchema } from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { routeSchema } from "../../src/http/contract-route.js";
import { ajvOptions } from "../../src/http/schema-compilers.js";
import type { Contract } from "../../src/contracts/kit.js";
import { contracts } from "../helpers/contracts.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

/**
 * The app compiles a route's schemas when a request first needs them (http/schema-compilers.ts):
 * here every route's request and answer schemas compile with the app's own compilers and options,
 * so a schema that cannot compile fails this test rather than a request.
 */
describe("every route's schemas compile", () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture("sqlite");
  });
  afterAll(async () => {
    await f.close();
  });

  it("the contracts are every operation of the OpenAPI document", async () => {
    const doc = (await f.app.inject({ method: "GET", url: "/openapi.json" })).json<{
      paths: Record<string, Record<string, { operationId: string }>>;
    }>();
    const operations = Object.values(doc.paths).flatMap((ops) =>
      Object.values(ops).map((op) => op.operationId),
    );
    expect(contracts.map((c) => c.operationId).sort()).toEqual(operations.sort());
  });

  it("compiles each request schema with Ajv and each answer with fast-json-stringify", () => {
    const validator = ajvCompiler()({}, ajvOptions);
    const serializer = serializerCompiler()();
    const route = (c: Contract) => ({ method: c.method, url: c.url });
    let compiled = 0;
    for (const c of contracts) {
      const schema = routeSchema(c);
      for (const httpPart of ["params", "querystring", "body"] as const) {
        const part: TSchema | undefined = schema[httpPart];
        if (part === undefined) continue;
        const compile = validator as unknown as (def: object) => (data: unknown) => boolean;
        expect(() => compile({ ...route(c), schema: part, httpPart }), c.operationId).not.toThrow();
        compiled++;
      }
      for (const [httpStatus, answer] of Object.entries(schema.response)) {
        expect(
          () => serializer({ ...route(c), schema: answer, httpStatus }),
          `${c.operationId} ${httpStatus}`,
        ).not.toThrow();
        compiled++;
      }
    }
    expect(compiled).toBeGreaterThan(contracts.length * 3);
  });
});
