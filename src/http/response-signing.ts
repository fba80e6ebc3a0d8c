import type { FastifyInstance, FastifyRequest } from "fastify";
import type { SigningKey, SigningKeyRing } from "../domain/signing/key-ring.js";
import { MasterKeyMismatchError } from "../domain/signing/key-material.js";
import {
  endorsementsHeader,
  isValidNonce,
  nonceHeader,
  signatureBase,
  signatureHeader,
  signatureHeaderValue,
} from "../domain/signing/response-signature.js";
import { ShipkeyError } from "../errors.js";
import { limits } from "../contracts/vocabulary.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The exact JSON body bytes received, kept on the license endpoints for signing. */
    rawBody: Buffer | null;
  }
}

/**
 * Signs the scope's answers when the client asks for it (docs/reference/signing-and-certificates.md): the request
 * carries a valid Shipkey-Nonce and its body's productSlug names an existing product. The
 * signature binds the answer (status, Date, body) to the request (path, nonce, exact body
 * bytes). Which product signs never depends on the license key, so a signature tells nothing
 * about a key. A malformed nonce is a 400 before anything else.
 */
export function signLicenseAnswers(app: FastifyInstance, ring: SigningKeyRing): void {
  keepRawJsonBodies(app);

  app.addHook("onRequest", (request, _reply, done) => {
    const nonce = request.headers[nonceHeader];
    if (nonce !== undefined && (typeof nonce !== "string" || !isValidNonce(nonce))) {
      done(
        new ShipkeyError(
          "INVALID_NONCE",
          "Shipkey-Nonce must be 16 to 128 characters: letters, digits, - or _",
        ),
      );
      return;
    }
    done();
  });

  // Callback style: the usual case (a known product, its key in memory) costs no promise.
  app.addHook("onSend", (request, reply, payload, done) => {
    const nonce = request.headers[nonceHeader];
    if (typeof nonce !== "string" || !isValidNonce(nonce)) {
      done(null, payload);
      return;
    }
    if (typeof payload !== "string" && !Buffer.isBuffer(payload)) {
      done(null, payload);
      return;
    }
    const attach = (key: SigningKey | null) => {
      if (key === null) {
        done(null, payload);
        return;
      }
      const date = new Date().toUTCString();
      const base = signatureBase({
        path: pathOf(request.url),
        status: reply.statusCode,
        date,
        nonce,
        requestBody: request.rawBody ?? "",
        responseBody: payload,
      });
      signatureHeaderValue(key.kid, key.privateKey, base, (err, value) => {
        if (err) {
          request.log.error({ err }, "cannot sign the answer");
        } else {
          reply.header("date", date);
          reply.header(signatureHeader, value);
          if (key.endorsements !== null) reply.header(endorsementsHeader, key.endorsements);
        }
        done(null, payload);
      });
    };
    const slug = productSlugOf(request);
    if (slug === null) {
      attach(null);
      return;
    }
    let key: SigningKey | null | Promise<SigningKey | null>;
    try {
      key = ring.keyFor(slug);
    } catch (err) {
      key = Promise.reject(err);
    }
    if (!(key instanceof Promise)) {
      attach(key);
      return;
    }
    key.then(attach).catch((err: unknown) => {
      // The answer goes out unsigned; a client refuses it, which is the safe failure. A wrong
      // master key is an operator's error; a database fault is reported by the request itself.
      if (err instanceof MasterKeyMismatchError)
        request.log.error({ err }, "cannot sign the answer");
      else request.log.debug({ err }, "cannot sign the answer: signing key unavailable");
      done(null, payload);
    });
  });
}

/**
 * The scope's JSON parser keeps the exact bytes received (request.rawBody), which the signature
 * covers, then parses them as Fastify's default parser does.
 */
function keepRawJsonBodies(app: FastifyInstance): void {
  app.decorateRequest("rawBody", null);
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    const bytes = body as Buffer;
    request.rawBody = bytes;
    parseJson(request, bytes.toString("utf8"), done);
  });
}

const pathOf = (url: string) => {
  const query = url.indexOf("?");
  return query === -1 ? url : url.slice(0, query);
};

/** The body's productSlug when it is a plausible identifier, else null. */
function productSlugOf(request: FastifyRequest): string | null {
  const body = request.body;
  if (typeof body !== "object" || body === null || Array.isArray(body)) return null;
  const value = (body as Record<string, unknown>).productSlug;
  return typeof value === "string" && value !== "" && value.length <= limits.identifier
    ? value
    : null;
}
