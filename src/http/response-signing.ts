import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import { limits } from "../domain/limits.js";
import type { SigningKey, SigningKeyRing } from "../domain/signing/key-ring.js";
import { MasterKeyMismatchError } from "../domain/signing/key-material.js";
import { productSlugOfLicenseKey } from "../domain/signing/signing-keys.js";
import {
  nonceHeader,
  signatureBase,
  signatureHeader,
  signatureHeaderValue,
} from "../domain/signing/response-signature.js";

type MaybeKey = SigningKey | null | Promise<SigningKey | null>;

/**
 * Signs every answer of the scope's routes whose product is known (docs/decisions.md): the
 * product named by the body's productSlug, else the product of the body's license key. The Date
 * header is set here, so the one signed is the one sent; the body is signed as the exact bytes
 * sent. Answers without a known product (no parsed body, unknown product and key) go unsigned.
 */
export function signLicenseAnswers(
  app: FastifyInstance,
  db: Kysely<DB>,
  ring: SigningKeyRing,
): void {
  // Callback style: the usual case (a known product, its key in memory) costs no promise.
  app.addHook("onSend", (request, reply, payload, done) => {
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
      const nonce = request.headers[nonceHeader];
      const base = signatureBase(
        pathOf(request.url),
        date,
        payload,
        typeof nonce === "string" ? nonce : "",
      );
      signatureHeaderValue(key.kid, key.privateKey, base, (err, value) => {
        if (err) {
          request.log.error({ err }, "cannot sign the answer");
        } else {
          reply.header("date", date);
          reply.header(signatureHeader, value);
        }
        done(null, payload);
      });
    };
    let key: MaybeKey;
    try {
      key = signingKeyOf(request, db, ring);
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

const pathOf = (url: string) => {
  const query = url.indexOf("?");
  return query === -1 ? url : url.slice(0, query);
};

const stringField = (body: unknown, name: string): string | null => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return null;
  const value = (body as Record<string, unknown>)[name];
  return typeof value === "string" && value !== "" && value.length <= limits.identifier
    ? value
    : null;
};

function signingKeyOf(request: FastifyRequest, db: Kysely<DB>, ring: SigningKeyRing): MaybeKey {
  const slug = stringField(request.body, "productSlug");
  const byLicense = async (): Promise<SigningKey | null> => {
    const licenseKey = stringField(request.body, "licenseKey");
    if (licenseKey === null) return null;
    const licenseSlug = await productSlugOfLicenseKey(db, licenseKey);
    return licenseSlug === null || licenseSlug === slug ? null : ring.keyFor(licenseSlug);
  };
  if (slug === null) return byLicense();
  const key = ring.keyFor(slug);
  if (key instanceof Promise) return key.then((found) => found ?? byLicense());
  return key ?? byLicense();
}
