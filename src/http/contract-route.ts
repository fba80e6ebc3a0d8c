import type { IncomingMessage, ServerResponse } from "node:http";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest, RawServerDefault } from "fastify";
import { type Contract, type ContractSchema, failureSchemaOf } from "../contracts/kit.js";
import type { DB } from "../db/schema.js";
import { requireScope } from "./admin-auth.js";
import type { Kysely } from "kysely";
import { type ErrorCode, httpStatusByCode } from "../errors.js";
import { assertKnownFields } from "./unknown-fields.js";
import { contractValidator } from "./request-reader.js";

/** A Fastify scope whose routes take their types from their contract's schemas. */
export type App = FastifyInstance<
  RawServerDefault,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export const typed = (app: FastifyInstance): App => app.withTypeProvider<TypeBoxTypeProvider>();

const bodyErrors: ErrorCode[] = [
  "INVALID_JSON",
  "BODY_NOT_OBJECT",
  "UNSUPPORTED_MEDIA_TYPE",
  "PAYLOAD_TOO_LARGE",
  "MISSING_REQUIRED_FIELDS",
  "INVALID_FIELD_TYPE",
  "FIELD_TOO_LONG",
  "INVALID_FIELD_VALUE",
];

/** Every code a contract's endpoint may answer: its own, and those its shape and guard imply. */
export function errorCodesOf(c: Contract): ErrorCode[] {
  const codes = new Set<ErrorCode>(c.errors ?? []);
  const add = (...more: ErrorCode[]) => more.forEach((code) => codes.add(code));
  if (c.schema.body) add(...bodyErrors);
  if (c.schema.params || c.schema.querystring) add("INVALID_FIELD_VALUE");
  if ([c.schema.body, c.schema.querystring].some(refusesUnknown) || takesNoBody(c)) {
    add("UNKNOWN_FIELD");
  }
  if (c.signedAnswers) add("INVALID_NONCE");
  if (c.auth !== "public") add("INVALID_API_KEY", "MISSING_SCOPE");
  if (c.admin) {
    add("CSRF_TOKEN_INVALID");
    if (c.method !== "GET") {
      add("IDEMPOTENCY_KEY_REUSED", "IDEMPOTENCY_KEY_IN_USE", "IDEMPOTENCY_REPLAY_WITHHELD");
    }
  }
  add("RATE_LIMITED", "DATABASE_UNAVAILABLE", "INTERNAL_ERROR");
  return [...codes];
}

/**
 * The route schema Fastify registers for a contract: its requests and answers, one failure
 * answer per status its codes map to (named in the description), and what the OpenAPI document
 * shows (operationId, tag, summary, the scope as the security requirement). Typed as the
 * contract's own schema, so handlers and replies see exactly its types.
 */
export function routeSchema<S extends ContractSchema>(c: Contract<S>): S {
  const failure = failureSchemaOf(c);
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodesOf(c)) {
    const status = httpStatusByCode[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const failures = Object.fromEntries(
    [...byStatus].map(([status, codes]) => [status, { ...failure, description: codes.join(", ") }]),
  );
  return {
    ...c.schema,
    operationId: c.operationId,
    tags: [c.tag],
    summary: c.summary,
    ...(c.description === undefined ? {} : { description: c.description }),
    ...(c.auth === "public" ? {} : { security: [{ apiKey: [c.auth] }] }),
    response: { ...failures, "4xx": failure, "5xx": failure, ...c.schema.response },
  };
}

/**
 * A public route's options from its contract (publish's included): its schema, read by the
 * request reader (request-reader.ts) as the route's validator, and its failure flag. `body`
 * replaces the body's reader where the route reads the body in steps of its own.
 */
export function publicRoute<S extends ContractSchema>(
  c: Contract<S>,
  body?: (value: unknown) => unknown,
) {
  return {
    schema: routeSchema(c),
    validatorCompiler: contractValidator(c, body),
    config: {
      ...(c.failureFlag === undefined ? {} : { failureFlag: c.failureFlag }),
      // A POST without Content-Type is 415 even when empty.
      jsonBody: c.schema.body !== undefined,
    },
  };
}

/** Whether a schema, or an object within it, refuses properties it does not define. */
function refusesUnknown(schema: unknown): boolean {
  if (typeof schema !== "object" || schema === null) return false;
  const { additionalProperties, properties, items, anyOf } = schema as Record<string, unknown>;
  if (additionalProperties === false) return true;
  const inner = [
    ...(typeof properties === "object" && properties !== null ? Object.values(properties) : []),
    items,
    ...(Array.isArray(anyOf) ? (anyOf as unknown[]) : []),
  ];
  return inner.some(refusesUnknown);
}

/** An admin write whose contract takes no body: any field a body holds is unknown. */
function takesNoBody(c: Contract): boolean {
  return c.admin === true && c.method !== "GET" && c.schema.body === undefined;
}

/** The body of a write that takes none: an object with a field is refused (UNKNOWN_FIELD). */
async function refuseBodyFields(request: FastifyRequest): Promise<void> {
  const body = request.body;
  if (typeof body === "object" && body !== null && !Array.isArray(body)) {
    assertKnownFields(body as Record<string, unknown>, []);
  }
}

/**
 * An admin route's options from its contract: its schema, and the scope the contract names as
 * its guard (an API key holding it, or a signed-in admin), so the documented scope is the one
 * enforced. A write without a body in its contract refuses a body holding any field, as the
 * others refuse the fields their schema does not define.
 */
export function adminRoute<S extends ContractSchema>(db: Kysely<DB>, c: Contract<S>) {
  if (c.auth === "public" || !c.admin) {
    throw new Error(`${c.operationId} is not an admin API contract (adminContract)`);
  }
  return {
    onRequest: requireScope(db, c.auth),
    schema: routeSchema(c),
    ...(takesNoBody(c) ? { preValidation: refuseBodyFields } : {}),
  };
}
