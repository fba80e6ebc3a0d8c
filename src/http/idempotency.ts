import { createHash } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import type { Actor } from "../domain/audit/audit-log.js";
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  type IdempotencyClaim,
  releaseIdempotencyKey,
} from "../domain/idempotency/idempotency-keys.js";
import { limits } from "../contracts/vocabulary.js";
import { ShipkeyError } from "../errors.js";
import { requireActor } from "./admin-auth.js";
import type { DatabaseFaults } from "./database-faults.js";
import { singleHeader } from "./request-fields.js";

declare module "fastify" {
  interface FastifyRequest {
    /**
     * Set while this request holds an Idempotency-Key claim. An admin route passes it to its
     * action, whose transaction marks it applied with the audit entry.
     */
    idempotencyClaim: IdempotencyClaim | null;
  }
  interface FastifyContextConfig {
    /** The answer holds a secret shown once: kept out of the idempotency store, never replayed. */
    secretAnswer?: boolean;
  }
}

/** The methods whose requests take an Idempotency-Key (also documented in openapi.ts). */
export const writeMethods = new Set(["POST", "PUT", "PATCH", "DELETE"]);
/** The answer's headers a replay repeats (besides its status and body). */
const replayedHeaders = ["content-type", "location"] as const;

/**
 * Idempotency-Key on the admin API's writes (domain/idempotency): after validation and
 * authentication, claim the key or replay its answer; once answered, store a success or release
 * the claim of a failure.
 */
export function registerIdempotency(
  app: FastifyInstance,
  db: Kysely<DB>,
  faults: DatabaseFaults,
): void {
  app.decorateRequest("idempotencyClaim", null);

  app.addHook("preHandler", async (request, reply) => {
    if (!writeMethods.has(request.method)) return;
    const key = idempotencyKeyOf(request);
    if (key === undefined) return;
    const result = await claimIdempotencyKey(db, {
      caller: callerOf(requireActor(request)),
      key,
      fingerprint: requestFingerprint(request.method, request.url, request.body),
    });
    if ("claim" in result) {
      request.idempotencyClaim = result.claim;
      return;
    }
    const { statusCode, headers, body } = result.replay;
    return reply
      .status(statusCode)
      .headers(headers)
      .header("idempotent-replayed", "true")
      .send(body);
  });

  app.addHook("onSend", async (request, reply, payload) => {
    const claim = request.idempotencyClaim;
    if (claim === null) return payload;
    request.idempotencyClaim = null;
    try {
      if (reply.statusCode < 300 && typeof payload === "string") {
        const secret = request.routeOptions.config.secretAnswer === true;
        await completeIdempotencyKey(db, claim, {
          statusCode: reply.statusCode,
          headers: headersOf(reply),
          body: secret ? null : payload,
        });
      } else {
        await releaseIdempotencyKey(db, claim);
      }
    } catch (err) {
      // The request itself is done: its answer goes out. The claim expires after
      // abandonedClaimMs (idempotency-keys.ts).
      if (!faults.reportIfUnavailable(err, "storing an idempotent answer")) {
        request.log.error({ err }, "storing an idempotent answer failed");
      }
    }
    return payload;
  });
}

/**
 * The Idempotency-Key header: 1 to 255 printable ASCII characters, given once. The draft's
 * quoted form ("abc") names the same key as the bare one (abc).
 */
const idempotencyKeyPattern = new RegExp(`^[\\x20-\\x7e]{1,${limits.idempotencyKey}}$`);

function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  if (request.headers["idempotency-key"] === undefined) return undefined;
  const raw = singleHeader(request.raw, "idempotency-key") ?? "";
  const key = /^".*"$/.test(raw) ? raw.slice(1, -1) : raw;
  if (!idempotencyKeyPattern.test(key)) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `Idempotency-Key header must be given once, as 1 to ${limits.idempotencyKey} printable ASCII characters`,
      { field: "Idempotency-Key" },
    );
  }
  return key;
}

/** Keys are per caller: one caller never sees another's answers. */
function callerOf(actor: Actor): string {
  return `${actor.type}:${actor.id ?? ""}`;
}

/** The request a key stands for: method, URL (with path parameters and query) and body. */
export function requestFingerprint(method: string, url: string, body: unknown): string {
  return createHash("sha256")
    .update(`${method} ${url}\n${JSON.stringify(body ?? null)}`)
    .digest("hex");
}

function headersOf(reply: FastifyReply): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of replayedHeaders) {
    const value = reply.getHeader(name);
    if (typeof value === "string") headers[name] = value;
  }
  return headers;
}
