import type { Static, TSchema } from "typebox";
import { Value } from "typebox/value";
import { ShipkeyError } from "../../errors.js";
import { parseIsoTimestamp } from "../../lib/time.js";
import { fieldPath } from "../request-fields.js";

/** A form as @fastify/formbody parses it (or a query string): a name's value or values. */
export type Form = Record<string, string | string[] | undefined>;

/** A form field as text; anything that is not a string (a JSON body, say) reads as "". */
export function text(form: Form | undefined, name: string): string {
  return verbatim(form, name).trim();
}

/** A form field exactly as typed (a password): not trimmed. */
function verbatim(form: Form | undefined, name: string): string {
  const value: unknown = form?.[name];
  const first: unknown = Array.isArray(value) ? value[0] : value;
  return typeof first === "string" ? first : "";
}

/** Every value a form sends under `name` (ticked checkboxes). */
export function list(form: Form | undefined, name: string): string[] {
  const value: unknown = form?.[name];
  const all: unknown[] = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return all.filter((item): item is string => typeof item === "string");
}

type Body<S extends TSchema> = NonNullable<Static<S>>;
type FieldOf<S extends TSchema> = Extract<keyof Body<S>, string>;
/** The fields a form gives: each one it reads is there, optional in the schema or not. */
type Read<S extends TSchema, K extends FieldOf<S>> = Required<Pick<Body<S>, K>>;

/** What formBody reads from a schema: a property's JSON Schema types. */
interface PropertySchema {
  type?: string | string[];
}

/** How a form gives some of its fields, beyond what their schema says. */
export interface FormReading<S extends TSchema, K extends FieldOf<S>> {
  /** The body's fields this form has, when it has only some (default: every one). */
  fields?: readonly K[];
  /** Typed in a datetime-local input (read as UTC) or as an ISO timestamp; given as ISO. */
  dates?: readonly NoInfer<K>[];
  /** Read exactly as typed (a password), not trimmed. */
  verbatim?: readonly NoInfer<K>[];
  /** The domain's checks of the body (its *Errors functions): their messages come first. */
  checks?: (
    body: Read<S, NoInfer<K>>,
  ) => readonly ShipkeyError[] | Promise<readonly ShipkeyError[]>;
}

/**
 * A form read as the body of the write it stands for, checked against that body's schema (the
 * admin API's contract): the one place where form text becomes numbers, booleans, lists and
 * nulls. Each field is read by its schema's type: an integer from digits, a boolean from a
 * ticked checkbox ("on", or "true"), a list from ticked checkboxes or comma-separated text, ""
 * as null where the schema allows null. Every refusal is found in one pass, each field's own
 * first (a field that cannot be read, then the domain's checks, then the schema), and thrown
 * together (FormRefused).
 */
export async function formBody<S extends TSchema, K extends FieldOf<S> = FieldOf<S>>(
  schema: S,
  form: Form | undefined,
  reading: FormReading<S, K> = {},
): Promise<Read<S, K>> {
  const properties = (schema as { properties?: Record<string, TSchema> }).properties ?? {};
  const names: readonly string[] = reading.fields ?? Object.keys(properties);
  const errors: ShipkeyError[] = [];
  const body: Record<string, unknown> = {};
  for (const name of names) {
    const property = properties[name];
    if (property === undefined) throw new Error(`the schema has no field ${name}`);
    try {
      body[name] = fieldValue(form, name, property as PropertySchema, reading);
    } catch (err) {
      if (!(err instanceof ShipkeyError)) throw err;
      errors.push(err);
      body[name] = typesOf(property as PropertySchema).includes("null") ? null : 0;
    }
  }
  const read = body as Read<S, K>;
  errors.push(...((await reading.checks?.(read)) ?? []));
  const refused = new Set(errors.map((error) => rootOf(error.details.field)));
  for (const name of names.filter((n) => !refused.has(n))) {
    const property = properties[name] as TSchema;
    const [first] = Value.Errors(property, body[name]);
    if (first === undefined) continue;
    const path = fieldPath([name, ...first.instancePath.split("/").slice(1)]) ?? name;
    const message = `${path} ${ruleOf(first, first.instancePath === "" ? property : {})}`;
    errors.push(new ShipkeyError("INVALID_FIELD_VALUE", message, { field: path }));
  }
  const [head, ...rest] = errors;
  if (head) throw new FormRefused([head, ...rest]);
  return read;
}

/**
 * A schema rule a value breaks, in the words of the domain's own checks ("must be at most 200
 * characters", "must be a whole number from 0 to 100, or null"); any other, as the validator
 * says it.
 */
function ruleOf(
  error: { keyword: string; message: string; params: Record<string, unknown> },
  property: PropertySchema & { minimum?: number; maximum?: number },
): string {
  const { keyword, params } = error;
  const limit = typeof params.limit === "number" ? params.limit : undefined;
  const { minimum, maximum } = property;
  const integer = typesOf(property).includes("integer");
  if ((keyword === "minimum" || keyword === "maximum") && integer && minimum !== undefined) {
    const range = maximum === undefined ? `at least ${minimum}` : `from ${minimum} to ${maximum}`;
    const orNull = typesOf(property).includes("null") ? ", or null" : "";
    return `must be a whole number ${range}${orNull}`;
  }
  if (keyword === "maxLength" && limit !== undefined) return `must be at most ${limit} characters`;
  if (keyword === "minLength" && limit === 1) return "is required";
  if (keyword === "minItems" && limit === 1) return "must name at least one";
  if (keyword === "enum" && Array.isArray(params.allowedValues)) {
    return `must be one of ${params.allowedValues.map(String).join(", ")}`;
  }
  return error.message;
}

function typesOf(property: PropertySchema): string[] {
  const { type } = property;
  return Array.isArray(type) ? type : type === undefined ? [] : [type];
}

function fieldValue<S extends TSchema, K extends FieldOf<S>>(
  form: Form | undefined,
  name: string,
  property: PropertySchema,
  reading: FormReading<S, K>,
): unknown {
  const types = typesOf(property);
  const nullable = types.includes("null");
  const is = (names: readonly string[] | undefined) => names?.includes(name) === true;
  if (types.includes("array")) {
    const items = list(form, name)
      .flatMap((value) => value.split(","))
      .map((item) => item.trim())
      .filter((item) => item !== "");
    return items.length === 0 && nullable ? null : items;
  }
  if (types.includes("boolean")) return ["on", "true"].includes(text(form, name));
  const value = is(reading.verbatim) ? verbatim(form, name) : text(form, name);
  if (value === "" && nullable) return null;
  if (types.includes("integer")) return wholeNumber(name, value);
  if (is(reading.dates)) return isoTimestamp(name, value);
  return value;
}

function wholeNumber(name: string, value: string): number {
  if (!/^\d+$/.test(value)) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${name} must be a whole number`, {
      field: name,
    });
  }
  return Number(value);
}

/** A datetime-local value (read as UTC) or an ISO timestamp, as an ISO timestamp. */
function isoTimestamp(name: string, value: string): string {
  const withZone = /Z|[+-]\d{2}:\d{2}$/.test(value)
    ? value
    : `${value.length === 16 ? `${value}:00` : value}Z`;
  const ms = parseIsoTimestamp(withZone);
  if (ms === null) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${name} must be a date and time`, {
      field: name,
    });
  }
  return new Date(ms).toISOString();
}

/** The input a field path is about: `features[2]` is the `features` input. */
function rootOf(field: string | undefined): string | undefined {
  return field?.split(/[.[]/)[0];
}

/** A form's refusals, found together so that one round trip shows every invalid field. */
export class FormRefused extends ShipkeyError {
  constructor(readonly all: readonly [ShipkeyError, ...ShipkeyError[]]) {
    super(all[0].code, all[0].message, all[0].details);
  }
}

/** A refused form, as its page shows it again: with the status of the refusal's code. */
export interface FormFailure {
  status: number;
  /** Each message beside the input it concerns; `_form`: above the form. */
  errors: Record<string, string>;
}

/**
 * A refusal shown on the form it concerns: each message beside its field (the root of its path)
 * when the form has it among `fields`, otherwise above the form (`_form`); a field's first
 * message wins. The status is the code's (httpStatusByCode), as the admin API answers it.
 * Anything that is not a ShipkeyError is rethrown, for the error handler.
 */
export function formFailure(error: unknown, fields: readonly string[]): FormFailure {
  if (!(error instanceof ShipkeyError)) throw error;
  const errors: Record<string, string> = {};
  for (const one of error instanceof FormRefused ? error.all : [error]) {
    const root = rootOf(one.details.field);
    const field = root !== undefined && fields.includes(root) ? root : "_form";
    errors[field] ??= one.message;
  }
  return { status: error.statusCode, errors };
}
