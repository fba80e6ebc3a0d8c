import type { TSchema } from "typebox";
import {
  ActivateAnswer,
  activate,
  Activation,
  CheckoutAnswer,
  checkout,
  DeactivateAnswer,
  deactivate,
  Jwks,
  PublishedJwk,
  productKeys,
  ValidateAnswer,
  validate,
} from "../../src/contracts/license-api.js";
import { Failure, SuccessFailure, ValidFailure } from "../../src/contracts/kit.js";
import { LatestAnswer, latest } from "../../src/contracts/releases.js";
import { errorCodesOf } from "../../src/http/contract-route.js";

/** The endpoints the SDK calls: their error codes are the ones it may meet. */
const sdkEndpoints = [activate, validate, deactivate, checkout, productKeys, latest];

/** The answers the SDK reads, by the name it knows them by. */
const sdkTypes: Record<string, TSchema> = {
  Activation,
  ActivateAnswer,
  ValidateAnswer,
  DeactivateAnswer,
  CheckoutAnswer,
  PublishedJwk,
  Jwks,
  LatestAnswer,
  Failure,
  SuccessFailure,
  ValidFailure,
};

interface JsonSchema {
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  description?: string;
  title?: string;
}

/** TypeScript text for the JSON Schema subset the answer contracts use. */
function typeOf(schema: JsonSchema, indent: string, named: Map<object, string>): string {
  const name = named.get(schema);
  if (name !== undefined && indent !== "") return name;
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  const types = [schema.type ?? "unknown"].flat();
  return types
    .map((type) => {
      switch (type) {
        case "string":
          return "string";
        case "integer":
        case "number":
          return "number";
        case "boolean":
          return "boolean";
        case "null":
          return "null";
        case "array": {
          const item = typeOf(schema.items ?? {}, indent, named);
          return item.includes(" | ") ? `Array<${item}>` : `${item}[]`;
        }
        case "object": {
          const inner = `${indent}  `;
          const lines = Object.entries(schema.properties ?? {}).map(([key, value]) => {
            const optional = schema.required?.includes(key) ? "" : "?";
            const doc = value.description ? `${inner}/** ${value.description} */\n` : "";
            return `${doc}${inner}${key}${optional}: ${typeOf(value, inner, named)};`;
          });
          return `{\n${lines.join("\n")}\n${indent}}`;
        }
        default:
          throw new Error(`sdk-contract: no TypeScript for JSON type ${type}`);
      }
    })
    .join(" | ");
}

/** The text of packages/client/src/contract.ts, generated from the server's contracts. */
export function sdkContractSource(): string {
  const named = new Map<object, string>(Object.entries(sdkTypes).map(([n, s]) => [s, n]));
  const declarations = Object.entries(sdkTypes).map(
    ([name, schema]) => `export type ${name} = ${typeOf(schema as JsonSchema, "", named)};`,
  );
  const codes = [...new Set(sdkEndpoints.flatMap((c) => errorCodesOf(c)))].sort();
  return [
    "// Generated from the server's contracts (src/contracts) by `npm run contracts`; do not edit.",
    "// test/sdk/sdk-contract.test.ts fails when this file and the contracts disagree.",
    "",
    declarations.join("\n\n"),
    "",
    "/** Every code the server may answer the endpoints the SDK calls with (docs/reference/errors.md). */",
    `export type ServerErrorCode = ${codes.map((code) => JSON.stringify(code)).join(" | ")};`,
    "",
  ].join("\n");
}
