import type { IncomingMessage } from "node:http";
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type ErrorCode, httpStatusByCode, ShipkeyError } from "../errors.js";
import type { DatabaseFaults } from "./database-faults.js";
import { fieldPath } from "./request-fields.js";
import { unknownField } from "./unknown-fields.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** Failure bodies of this route also carry `<flag>: false` (success or valid). */
    failureFlag?: "success" | "valid";
    /** The route takes a JSON body: a POST without Content-Type is 415 even when empty. */
    jsonBody?: boolean;
  }
}

/**
 * How a scope answers a failure once the handler has made it a ShipkeyError: the API as JSON
 * (jsonFailure), the dashboard as a page. `error` is what was thrown, before translation.
 */
export type FailureResponse = (
  failure: ShipkeyError,
  request: FastifyRequest,
  reply: FastifyReply,
  error: FastifyError,
) => FastifyReply | Promise<FastifyReply>;

/**
 * The one error handler: every failure becomes a ShipkeyError, whose code gives the status
 * (httpStatusByCode). Framework errors (body parsing, size, media type) are translated; a
 * database fault is 503 with Retry-After; anything unexpected is a 500 that is logged with its
 * stack here and leaks nothing to the client. `respond` writes the answer.
 */
export function errorHandler(faults: DatabaseFaults, respond: FailureResponse = jsonFailure) {
  return async (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const failure = faults.reportIfUnavailable(error, routeOf(request))
      ? new ShipkeyError("DATABASE_UNAVAILABLE", "Service unavailable")
      : toShipkeyError(error, request);
    if (failure.code === "INTERNAL_ERROR") {
      request.log.error({ err: error }, "unhandled error");
    }
    if (failure.code === "DATABASE_UNAVAILABLE") {
      reply.header("retry-after", String(databaseRetryAfterSeconds));
    }
    if (failure.code === "PAYLOAD_TOO_LARGE") {
      // A client still uploading would see EPIPE instead of our answer if we replied now.
      await discardRemainingBody(request.raw);
      reply.header("connection", "close");
    }
    return respond(failure, request, reply.status(failure.statusCode), error);
  };
}

/** `{error, code, ...}` JSON, with the route's failure flag. */
export const jsonFailure: FailureResponse = (failure, request, reply) => {
  const flag = request.routeOptions.config.failureFlag;
  return reply.type("application/json; charset=utf-8").send(failureBody(failure, flag));
};

/** Every failure of the API leaves as `{error, code, ...}` JSON with the status of its code. */
export function registerErrorHandling(app: FastifyInstance, faults: DatabaseFaults): void {
  app.setErrorHandler(errorHandler(faults));

  app.setNotFoundHandler((request, reply) => {
    return reply
      .status(404)
      .type("application/json; charset=utf-8")
      .send({
        error: `No route for ${request.method} ${request.url.split("?")[0]}`,
        code: "ROUTE_NOT_FOUND",
      });
  });
}

/** `{error, code[, success|valid: false][, field][, fields][, canActivate]}`. */
function failureBody(failure: ShipkeyError, flag: "success" | "valid" | undefined): object {
  const { field, fields, ...rest } = failure.details;
  return {
    error: failure.message,
    code: failure.code,
    ...(flag ? { [flag]: false } : {}),
    ...(field !== undefined ? { field } : {}),
    ...(fields !== undefined ? { fields } : {}),
    ...rest,
  };
}

// Past these bounds a hostile client is cut off without an answer rather than read forever.
const discardMaxBytes = 64 * 1024 * 1024;
const discardMaxMs = 10_000;

function discardRemainingBody(raw: IncomingMessage): Promise<void> {
  if (raw.complete || raw.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let discarded = 0;
    const finish = () => {
      clearTimeout(timer);
      raw.off("data", onData).off("end", finish).off("close", finish).off("error", finish);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > discardMaxBytes) finish();
    };
    const timer = setTimeout(finish, discardMaxMs);
    raw.on("data", onData).on("end", finish).on("close", finish).on("error", finish);
    raw.resume();
  });
}

/** What a 503 for an unavailable database asks the client to wait before trying again. */
export const databaseRetryAfterSeconds = 5;

/** The route pattern a request matched, for logs (never the raw URL, which may hold keys). */
export function routeOf(request: FastifyRequest): string {
  return `${request.method} ${request.routeOptions.url ?? "?"}`;
}

function toShipkeyError(error: FastifyError, request: FastifyRequest): ShipkeyError {
  if (error instanceof ShipkeyError) return error;
  switch (error.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new ShipkeyError(
        "PAYLOAD_TOO_LARGE",
        `Request body exceeds ${request.routeOptions.bodyLimit ?? 0} bytes`,
      );
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new ShipkeyError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json");
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return new ShipkeyError("BODY_NOT_OBJECT", "Request body must be a JSON object");
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return new ShipkeyError("INVALID_JSON", "Request body is not valid JSON");
    case "FST_ERR_VALIDATION": {
      const unknown = unknownFieldOf(error);
      if (unknown) return unknown;
      const field = validationField(error);
      return new ShipkeyError("INVALID_FIELD_VALUE", error.message, field ? { field } : {});
    }
  }
  // JSON.parse / secure-json-parse failures (including __proto__ poisoning) arrive as
  // SyntaxErrors that Fastify already marked 400.
  if (error instanceof SyntaxError && error.statusCode === 400) {
    return new ShipkeyError("INVALID_JSON", "Request body is not valid JSON");
  }
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return new ShipkeyError("BAD_REQUEST", "Bad request");
  }
  return new ShipkeyError("INTERNAL_ERROR", "Internal server error");
}

/**
 * Admin routes validate with JSON Schema; Fastify's message names the field and the rule
 * ("body/maxMachines must be integer", "body must have required property 'name'"). A property
 * the object's schema does not define is UNKNOWN_FIELD instead, with the close known property
 * (unknown-fields.ts): Ajv's additionalProperties error, or its required one when the object
 * also holds a property it does not define (Ajv checks required first; a misspelt required field
 * is both). Ajv's verbose errors carry the object's schema and value.
 */
function unknownFieldOf(error: FastifyError): ShipkeyError | undefined {
  const first: unknown = error.validation?.[0];
  if (!isRecord(first) || !isRecord(first.params) || !isRecord(first.parentSchema)) return;
  const { keyword, instancePath, params, parentSchema, data } = first;
  if (typeof instancePath !== "string") return;
  const known = isRecord(parentSchema.properties) ? Object.keys(parentSchema.properties) : [];
  let name: unknown;
  if (keyword === "additionalProperties") name = params.additionalProperty;
  else if (
    keyword === "required" &&
    parentSchema.additionalProperties === false &&
    isRecord(data)
  ) {
    name = Object.keys(data).find((key) => !known.includes(key));
  }
  if (typeof name !== "string") return;
  const path = fieldPath([...pathSegments(instancePath), name]) ?? name;
  const what = error.validationContext === "querystring" ? "query parameter" : "field";
  return unknownField(path, name, known, what);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** An Ajv instance path's segments: "/releases/0" → ["releases", "0"]. */
function pathSegments(instancePath: string): string[] {
  return instancePath
    .split("/")
    .slice(1)
    .map((segment) => segment.replaceAll("~1", "/").replaceAll("~0", "~"));
}

/**
 * The field an Ajv error is about, as a path (`name`, `features[2]`, `releases[0].downloadUrl`):
 * the instance path, plus the missing property the error names.
 */
function validationField(error: FastifyError): string | undefined {
  const first = error.validation?.[0];
  if (!first) return undefined;
  const segments = pathSegments(first.instancePath);
  const missing: unknown = first.params.missingProperty;
  if (typeof missing === "string") segments.push(missing);
  return fieldPath(segments);
}

/** Errors Fastify raises before routing, such as a URL with a broken percent-encoding. */
export function frameworkErrors(
  _error: FastifyError,
  _request: FastifyRequest,
  reply: FastifyReply,
): void {
  void reply
    .status(400)
    .type("application/json; charset=utf-8")
    .send({ error: "Malformed request URL", code: "BAD_REQUEST" });
}

/**
 * HTTP the parser cannot read (conflicting lengths, oversized headers, timeouts) never reaches
 * Fastify's request pipeline; answer it on the raw socket in the same JSON shape and hang up.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  const [code, message]: [ErrorCode, string] =
    error.code === "HPE_HEADER_OVERFLOW"
      ? ["HEADERS_TOO_LARGE", "Request headers are too large"]
      : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? ["REQUEST_TIMEOUT", "Request timed out"]
        : ["BAD_REQUEST", "Malformed HTTP request"];
  const status = httpStatusByCode[code];
  const body = JSON.stringify({ error: message, code });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}\r\n` +
      "Content-Type: application/json; charset=utf-8\r\n" +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      "Connection: close\r\n\r\n" +
      body,
  );
}
