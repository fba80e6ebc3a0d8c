import type { FastifySchemaCompiler } from "fastify";
import type { Static, TObject, TSchema } from "typebox";
import { type Contract, inputRulesOf } from "../contracts/kit.js";
import { ShipkeyError } from "../errors.js";
import { assertKnownFields } from "./unknown-fields.js";

/**
 * The request reader of the public routes (license endpoints, publish, feeds, downloads): a
 * contract's request schemas, read with the documented input rules
 * (docs/reference/license-endpoints.md) instead of Ajv's, so each refusal is the spec's, in its
 * order:
 *
 * - a field that is absent, null or "" is missing; "Missing required fields" lists every missing
 *   required one, in schema order; an optional one that is missing is left out;
 * - then each field in schema order: its JSON type ("<field> must be a string"), a NUL character
 *   (PostgreSQL cannot hold it), then its value: an enum, a whole number in its range (with its
 *   unit), one member of a union of one-field objects;
 * - the limits (maxLength, maxItems) are the domain's, checked after the spec's checks.
 *
 * InputRules (contracts/kit.ts) name what the schema cannot: the spec's own refusal codes, a
 * field that is never refused, one matched in any case. Routes whose order interleaves with
 * domain checks (publish) call the steps below themselves.
 */

export type JsonObject = Record<string, unknown>;

interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxLength?: number;
  properties?: Record<string, TSchema>;
  required?: string[];
  anyOf?: TSchema[];
}

const json = (schema: TSchema) => schema as JsonSchema;

export const isMissing = (value: unknown): boolean =>
  value === undefined || value === null || value === "";

const isObject = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The body, or an array item (`at`), as an object; else BODY_NOT_OBJECT or the item's refusal. */
export function readObject(value: unknown, schema?: TSchema, at?: string): JsonObject {
  if (isObject(value)) return value;
  const refusal = schema && inputRulesOf(schema).refusal;
  if (refusal !== undefined && at !== undefined) throw ShipkeyError.spec(refusal, { field: at });
  throw new ShipkeyError("BODY_NOT_OBJECT", "Request body must be a JSON object");
}

export const missingFields = (fields: string[]): ShipkeyError =>
  ShipkeyError.spec("MISSING_REQUIRED_FIELDS", { fields });

const pathOf = (at: string | undefined, name: string) =>
  at === undefined ? name : `${at}.${name}`;

/**
 * The object's required fields are present: else "Missing required fields" listing every missing
 * one in schema order, or, for an array item whose schema names a refusal, that refusal naming
 * the first (`releases[0].arch`).
 */
export function requirePresent(schema: TObject, object: JsonObject, at?: string): void {
  const missing = (json(schema).required ?? []).filter((name) => isMissing(object[name]));
  const [first] = missing;
  if (first === undefined) return;
  const refusal = inputRulesOf(schema).refusal;
  if (refusal !== undefined) throw ShipkeyError.spec(refusal, { field: pathOf(at, first) });
  throw missingFields(missing.map((name) => pathOf(at, name)));
}

/** The JSON type a schema takes besides null; a union's members' common one. */
function jsonType(schema: TSchema): string | undefined {
  const { type, anyOf } = json(schema);
  if (anyOf !== undefined) {
    const types = new Set(anyOf.map(jsonType));
    return types.size === 1 ? [...types][0] : undefined;
  }
  return [type ?? []].flat().find((t) => t !== "null");
}

const typeNames: Record<string, string> = {
  string: "a string",
  integer: "a number",
  number: "a number",
  boolean: "a boolean",
  array: "an array",
  object: "an object",
};

function hasType(type: string, value: unknown): boolean {
  switch (type) {
    case "integer":
      return typeof value === "number";
    case "array":
      return Array.isArray(value);
    case "object":
      return isObject(value);
    default:
      return typeof value === type;
  }
}

const mustBe = (path: string, words: string) =>
  new ShipkeyError("INVALID_FIELD_VALUE", `${path} must be ${words}`, { field: path });

/**
 * A present value's JSON type: "<path> must be a string" (INVALID_FIELD_TYPE), or the field's
 * own refusal (InputRules.mustBe). A list that must hold an item and holds none is missing.
 */
export function checkType(schema: TSchema, value: unknown, path: string): void {
  const type = jsonType(schema);
  if (type !== undefined && !hasType(type, value)) {
    const words = inputRulesOf(schema).mustBe;
    if (words !== undefined) throw mustBe(path, words);
    throw new ShipkeyError("INVALID_FIELD_TYPE", `${path} must be ${typeNames[type] ?? type}`, {
      field: path,
    });
  }
  if (Array.isArray(value) && value.length === 0 && (json(schema).minItems ?? 0) > 0) {
    throw missingFields([path]);
  }
}

/** A string holding U+0000: "<name> must not contain NUL characters", naming its path. */
export function checkNul(value: unknown, name: string, path = name): void {
  if (typeof value === "string" && value.includes("\u0000")) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${name} must not contain NUL characters`, {
      field: path,
    });
  }
}

/** "a whole number[ of <unit>][ from <minimum> to <maximum> | , at least <minimum>]". */
function wholeNumber(schema: TSchema): string {
  const { minimum, maximum } = json(schema);
  const { unit } = inputRulesOf(schema);
  const range =
    minimum === undefined
      ? ""
      : maximum === undefined
        ? `, at least ${minimum}`
        : ` from ${minimum} to ${maximum}`;
  return `a whole number${unit === undefined ? "" : ` of ${unit}`}${range}`;
}

const lowerCase = (value: unknown) => (typeof value === "string" ? value.toLowerCase() : null);

/**
 * A value's own rules, whatever its JSON type: an enum (its InputRules.refusal, else
 * INVALID_FIELD_VALUE), a whole number in its range, one member of a union of one-field
 * objects. Returns the value as read (an enum matched in any case: its own spelling).
 */
export function checkValue(schema: TSchema, value: unknown, path: string): unknown {
  const rules = inputRulesOf(schema);
  const { enum: values, anyOf } = json(schema);
  const anyCase = rules.anyCaseOf;
  const names: readonly unknown[] | undefined = anyCase ?? values;
  if (names !== undefined) {
    const found =
      anyCase === undefined
        ? names.find((name) => name === value)
        : anyCase.find((name) => name.toLowerCase() === lowerCase(value));
    if (found !== undefined) return found;
    if (rules.refusal !== undefined) throw ShipkeyError.spec(rules.refusal, { field: path });
    throw mustBe(path, `one of ${names.join(", ")}`);
  }
  if (jsonType(schema) === "integer") {
    const { minimum = -Infinity, maximum = Infinity } = json(schema);
    if (typeof value === "number" && Number.isSafeInteger(value)) {
      if (value >= minimum && value <= maximum) return value;
    }
    throw mustBe(path, rules.mustBe ?? wholeNumber(schema));
  }
  if (anyOf !== undefined) return checkMember(anyOf, value, path);
  return value;
}

/** A union of one-field objects ({percent} | {stepHours}): exactly one of them, its value read. */
function checkMember(members: TSchema[], value: unknown, path: string): JsonObject {
  const fields = members.flatMap((member) => Object.entries(json(member).properties ?? {}));
  const keys = isObject(value) ? Object.keys(value) : [];
  const field = keys.length === 1 ? fields.find(([name]) => name === keys[0]) : undefined;
  if (field === undefined) {
    const names = fields.map(([name]) => name);
    const list = `${names.slice(0, -1).join(", ")} or ${names.at(-1) ?? ""}`;
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${path} must have exactly one of ${list}`, {
      field: path,
    });
  }
  const [name, schema] = field;
  return { [name]: checkValue(schema, (value as JsonObject)[name], `${path}.${name}`) };
}

/**
 * One present field: its JSON type, NUL, then its value; the value as read. A lenient field
 * (InputRules.lenient) whose value the schema does not take, its maxLength included, reads as
 * undefined.
 */
export function readField(schema: TSchema, value: unknown, name: string, path = name): unknown {
  const read = () => {
    checkType(schema, value, path);
    checkNul(value, name, path);
    return checkValue(schema, value, path);
  };
  if (!inputRulesOf(schema).lenient) return read();
  const { maxLength = Infinity } = json(schema);
  if (typeof value === "string" && value.length > maxLength) return undefined;
  try {
    return read();
  } catch (err) {
    if (err instanceof ShipkeyError) return undefined;
    throw err;
  }
}

/**
 * The fields of `object` its schema defines, each read (readField) in schema order, a missing
 * one left out; `only` limits them to those names, in that order. A field the reader leaves to
 * its user (InputRules.unread) is passed on as it came.
 */
export function readFields<T extends TObject>(
  schema: T,
  object: JsonObject,
  only?: ReadonlyArray<keyof T["properties"] & string>,
): Partial<Static<T>> {
  const read: JsonObject = {};
  const properties = json(schema).properties ?? {};
  for (const name of only ?? Object.keys(properties)) {
    const field = properties[name];
    const value = object[name];
    if (field === undefined || isMissing(value)) continue;
    const result = inputRulesOf(field).unread ? value : readField(field, value, name);
    if (result !== undefined) read[name] = result;
  }
  return read as Partial<Static<T>>;
}

/**
 * A query string, whose values are strings: a parameter given more than once is refused where it
 * is read. The required parameters are read first, then the missing ones listed, then the others.
 */
function readQuery(schema: TObject, query: unknown): JsonObject {
  const params = isObject(query) ? query : {};
  const properties = json(schema).properties ?? {};
  const required = json(schema).required ?? [];
  const read: JsonObject = {};
  const readParam = (name: string) => {
    const field = properties[name] as TSchema;
    const value = params[name];
    if (inputRulesOf(field).unread) {
      if (value !== undefined) read[name] = value;
    } else if (value !== undefined && typeof value !== "string") {
      throw givenOnce(name);
    } else if (!isMissing(value)) {
      read[name] = readField(field, value, name);
    }
  };
  required.forEach(readParam);
  requirePresent(schema, params);
  Object.keys(properties)
    .filter((name) => !required.includes(name))
    .forEach(readParam);
  return read;
}

const givenOnce = (name: string) =>
  new ShipkeyError("INVALID_FIELD_VALUE", `${name} must be given once`, { field: name });

/** A JSON body: an object, its required fields present, then each field read in schema order. */
export function readBody<T extends TObject>(schema: T, body: unknown): Static<T> {
  const object = readObject(body);
  requirePresent(schema, object);
  // Every required field is present, and each field read is of its schema's type.
  return readFields(schema, object) as Static<T>;
}

/**
 * The validator of a public route (Fastify's validatorCompiler): its contract's schemas read as
 * above, the handler getting what they read. A path parameter is whatever the router matched
 * (a string, possibly empty; NUL refused by the scope's hook). `body` replaces the body's reader
 * where the route reads it in steps of its own (publish).
 */
export function contractValidator(
  c: Contract,
  body: (value: unknown) => unknown = (value) => readBody(c.schema.body as TObject, value),
): FastifySchemaCompiler<unknown> {
  const readers: Record<string, (value: unknown) => unknown> = {
    body,
    querystring: (value) => readQuery(c.schema.querystring as TObject, value),
    params: (value) => value,
  };
  return ({ httpPart }) => {
    const read = readers[httpPart ?? ""];
    if (read === undefined) throw new Error(`${c.operationId}: no reader for ${httpPart}`);
    return (data) => {
      try {
        return { value: read(data) };
      } catch (err) {
        if (err instanceof ShipkeyError) return { error: err };
        throw err;
      }
    };
  };
}

/**
 * A field the object's schema does not define, the first in the object's order: 400
 * UNKNOWN_FIELD naming it and the known field it is close to (unknown-fields.ts); `at` is the
 * object's own path (`releases[0]`).
 */
export function refuseUnknownFields(schema: TObject, object: JsonObject, at?: string): void {
  assertKnownFields(object, Object.keys(json(schema).properties ?? {}), at);
}
