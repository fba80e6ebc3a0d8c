import { type Static, type TSchema, type TUnsafe, Type } from "typebox";
import type { ErrorCode, specMessages } from "../errors.js";
import { type ApiKeyScope, limits } from "./vocabulary.js";

/**
 * Building blocks of the contracts. Nullable fields are `{type: [T, "null"]}`, the form
 * fast-json-stringify serializes fastest and OpenAPI 3.1 reads directly.
 */
export const DateTime = (description?: string) =>
  Type.String({ format: "date-time", ...(description === undefined ? {} : { description }) });

export const NullableString = (
  options: { description?: string; maxLength?: number; format?: string } = {},
) => Type.Unsafe<string | null>({ type: ["string", "null"], ...options });

export const NullableDateTime = (description?: string) =>
  NullableString({ format: "date-time", ...(description === undefined ? {} : { description }) });

export const NullableInteger = (
  options: { description?: string; minimum?: number; maximum?: number } = {},
) => Type.Unsafe<number | null>({ type: ["integer", "null"], ...options });

/** One of a list of string constants: `{type: "string", enum: [...]}`. */
export const StringEnum = <const T extends readonly string[]>(
  values: T,
  options: { description?: string } = {},
) => Type.Unsafe<T[number]>({ type: "string", enum: [...values], ...options });

/**
 * How the request reader (http/request-reader.ts) reads a field, beyond what its JSON Schema
 * says. Kept off the schema's enumerable keys, like TypeBox's own `~kind`, so Ajv and the OpenAPI
 * document never see it.
 */
export interface InputRules {
  /**
   * The spec's refusal: of a value outside the field's enum (whatever its JSON type), or of an
   * array item that is not an object or lacks a required field (naming the first one missing).
   */
  refusal?: keyof typeof specMessages;
  /** An enum matched in any case, read as its own spelling (the feeds' channel names). */
  anyCaseOf?: readonly string[];
  /** The unit a whole number counts, named in its refusal ("a whole number of seconds"). */
  unit?: string;
  /** Every refusal of the field, a value of another JSON type included: "<field> must be …". */
  mustBe?: string;
  /** Never refused: a value the schema does not take reads as absent (appVersion). */
  lenient?: true;
  /** Read where it is used, not by the reader (the feeds' credentials): any value passes. */
  unread?: true;
}

const inputKey = "~input";

/** `schema` with input rules (InputRules) added to any it has; returns the schema itself. */
export function withInput<T extends TSchema>(schema: T, rules: InputRules): T {
  const value = { ...inputRulesOf(schema), ...rules };
  Object.defineProperty(schema, inputKey, { value, configurable: true });
  return schema;
}

export const inputRulesOf = (schema: TSchema): InputRules =>
  ((schema as Record<string, unknown>)[inputKey] as InputRules | undefined) ?? {};

/** A string that is one of `values` in any case, read as the value (`beta` is BETA). */
export const AnyCaseEnum = <const T extends readonly string[]>(
  values: T,
  options: { description?: string } = {},
): TUnsafe<T[number]> =>
  withInput(Type.Unsafe<T[number]>({ type: "string", ...options }), { anyCaseOf: values });

/** A field the request reader leaves as sent (InputRules.unread): its type is unknown. */
export const Unread = (schema: TSchema): TUnsafe<unknown> =>
  withInput(Type.Unsafe<unknown>({ ...schema }), { unread: true });

/**
 * A request's fields as a handler hands them on: an optional one present, null when it was
 * missing (the reader leaves it out).
 */
export type NullWhenMissing<T> = {
  [K in keyof T]-?: undefined extends T[K] ? Exclude<T[K], undefined> | null : T[K];
};

/** A page of a list: `{items, nextCursor}`. */
export const Page = <T extends TSchema>(item: T) =>
  Type.Object({
    items: Type.Array(item),
    nextCursor: NullableString({
      description: "Pass back as `cursor` for the next page; null on the last page",
    }),
  });

/** `?limit=&cursor=` of a paginated list (query strings are text: no coercion). */
export const PageQuery = {
  limit: Type.Optional(
    Type.String({ pattern: "^[1-9][0-9]{0,2}$", description: "1 to 200, default 50" }),
  ),
  cursor: Type.Optional(
    Type.String({ maxLength: 200, description: "nextCursor of the last page" }),
  ),
};

/**
 * The admin API's requests are validated by their schemas (Ajv, no coercion): a body is `strict`,
 * so an unknown field is refused. Callers are an API key with the route's scope or a signed-in
 * admin (dashboard session, with X-CSRF-Token on writes).
 */
export const strict = { additionalProperties: false } as const;

/** A product's slug in a path or a body. */
export const Slug = Type.String({ minLength: 1, maxLength: limits.identifier });
export const SlugParams = Type.Object({ slug: Slug });

export const LicenseKeyParams = Type.Object({
  licenseKey: Type.String({ minLength: 1, maxLength: limits.identifier }),
});
/** What a route that names a license may answer: no such license, or one outside the key's. */
export const licenseErrors = ["LICENSE_NOT_FOUND", "PRODUCT_NOT_IN_KEY"] as const;

/** A deletion's answer: `{deleted: true, ...}` naming what was deleted. */
export const Deleted = <P extends Record<string, TSchema>>(properties: P) =>
  Type.Object({ deleted: Type.Literal(true), ...properties });

const message = Type.String({
  description: "Human-readable message (the spec's exact text where it has one)",
});
const code = Type.String({ description: "Stable code (docs/reference/errors.md)" });
const fieldProperties = {
  field: Type.Optional(Type.String({ description: "The one offending field, where there is one" })),
  fields: Type.Optional(
    Type.Array(Type.String(), {
      description: "MISSING_REQUIRED_FIELDS: every missing field, in check order",
    }),
  ),
};
const canActivate = Type.Optional(
  Type.Boolean({ description: "With MACHINE_NOT_ACTIVATED: whether a slot is free" }),
);

/**
 * A failure body: `{error, code}`, with `field` or `fields` where a field is at fault. The
 * property order is the order answers carry them.
 */
export const Failure = Type.Object(
  { error: message, code, ...fieldProperties },
  { title: "Failure" },
);
export type Failure = Static<typeof Failure>;

/** A license endpoint's failure: also `success: false` (checkout: and `canActivate`). */
export const SuccessFailure = Type.Object(
  { error: message, code, success: Type.Literal(false), canActivate, ...fieldProperties },
  { title: "SuccessFailure" },
);

/** Validate's failure: `valid: false`, and `canActivate` on "Machine not activated". */
export const ValidFailure = Type.Object(
  { error: message, code, valid: Type.Literal(false), canActivate, ...fieldProperties },
  { title: "ValidFailure" },
);

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export type Tag =
  | "Licenses"
  | "Releases"
  | "Update feeds"
  | "Signing keys"
  | "Admin: products"
  | "Admin: licenses"
  | "Admin: releases"
  | "Admin: API keys"
  | "Admin: audit"
  | "Admin: webhooks"
  | "Admin: e-mail"
  | "Admin: integrations"
  | "Health";

/** The route schema Fastify reads: requests and every answer. */
export interface ContractSchema {
  params?: TSchema;
  querystring?: TSchema;
  body?: TSchema;
  response: Record<number, TSchema>;
}

/** The flag a license endpoint's failure bodies carry as false. */
export type FailureFlag = "success" | "valid";

/**
 * One endpoint's contract: what the OpenAPI document says about it and what the route is
 * registered with. `auth` names who may call: anyone, or an API key with a scope (on the admin
 * API, `admin`, also a signed-in admin).
 */
export interface Contract<S extends ContractSchema = ContractSchema> {
  method: HttpMethod;
  url: string;
  operationId: string;
  tag: Tag;
  summary: string;
  description?: string;
  auth: "public" | ApiKeyScope;
  /**
   * The admin API (adminContract): an API key or a signed-in admin, whose writes carry the
   * session's X-CSRF-Token; every write may carry an Idempotency-Key.
   */
  admin?: true;
  /** The answers are signed when asked (a Shipkey-Nonce; malformed: 400 INVALID_NONCE). */
  signedAnswers?: true;
  /** Codes this endpoint may answer beyond the shared ones (bad input, auth, faults). */
  errors?: readonly ErrorCode[];
  schema: S;
  /** Every failure body also carries `<flag>: false` (its schema: failureSchemaOf). */
  failureFlag?: FailureFlag;
}

/** Keeps a contract's literal types (so the route and the domain see its exact schemas). */
export const contract = <const S extends ContractSchema>(c: Contract<S>): Contract<S> => c;

/** An admin API endpoint's contract (Contract.admin). */
export const adminContract = <const S extends ContractSchema>(
  c: Omit<Contract<S>, "admin">,
): Contract<S> => ({ ...c, admin: true });

/** The failure body's schema on every 4xx and 5xx answer of a contract's endpoint. */
export function failureSchemaOf(c: Contract): TSchema {
  if (c.failureFlag === "success") return SuccessFailure;
  if (c.failureFlag === "valid") return ValidFailure;
  return Failure;
}

/** The answer a contract gives with `status`. */
export type Answer<
  C extends Contract,
  Status extends keyof C["schema"]["response"] = 200,
> = C["schema"]["response"][Status] extends TSchema
  ? Static<C["schema"]["response"][Status]>
  : never;
