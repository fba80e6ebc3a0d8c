import { SignJWT } from "jose";
import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { toIso } from "../../lib/time.js";
import { type Product, requireProduct } from "../products/products.js";
import type { SigningKey } from "../signing/key-ring.js";
import {
  type LastSeenRecorder,
  type ValidateInput,
  type ValidateResult,
  validateLicenseOf,
} from "./validate-license.js";
import type { CheckoutAnswer } from "../../contracts/license-api.js";

export interface CheckoutInput extends ValidateInput {
  /** Shortens the product's offline period; a larger value is capped to it. */
  ttlSeconds: number | null;
}

export type CheckoutResult = Omit<CheckoutAnswer, "success">;

/** The JWS `typ` of a license certificate (docs/client.md, "License certificates"). */
export const certificateType = "shipkey-license+jwt";

/** Finds the product's current signing key (SigningKeyRing.keyFor). */
export type SigningKeyLookup = (
  productSlug: string,
) => SigningKey | null | Promise<SigningKey | null>;

/** What a checkout certifies, once validate's checks passed: its product, key and period. */
export interface CheckoutTerms {
  licenseId: string;
  license: ValidateResult;
  product: Product;
  key: SigningKey;
  /** The certificate's iat and exp, in epoch seconds. */
  iat: number;
  exp: number;
}

/**
 * Validate's checks, in its order and with its errors (and its last-seen refresh), then the
 * terms of the license certificate: the product's current signing key, and a period that is the
 * product's offline period from now (shortened by ttlSeconds), never past the license's own
 * expiry.
 */
export async function checkoutTerms(
  db: Kysely<DB>,
  input: CheckoutInput,
  lastSeen: LastSeenRecorder,
  signingKeyOf: SigningKeyLookup,
  now: number,
): Promise<CheckoutTerms> {
  const { licenseId, result: license } = await validateLicenseOf(db, input, lastSeen, now);
  const product = await requireProduct(db, input.productSlug);
  const key = await signingKeyOf(product.slug);
  if (!key) throw new Error(`product ${product.slug} has no signing key`);
  const iat = Math.floor(now / 1000);
  const period = Math.min(input.ttlSeconds ?? Infinity, product.offlinePeriodSeconds);
  const licenseEnd =
    license.expiresAt === null ? Infinity : Math.floor(Date.parse(license.expiresAt) / 1000);
  const exp = Math.min(iat + period, licenseEnd);
  return { licenseId, license, product, key, iat, exp };
}

/**
 * The license certificate: a compact JWS (EdDSA) that lets the machine run offline until `exp`.
 * Its offline place is reserved first (reserveCertificate).
 */
export async function signCertificate(
  terms: CheckoutTerms,
  machineId: string,
): Promise<CheckoutResult> {
  const { license, product, key, iat, exp } = terms;
  const certificate = await new SignJWT({
    product: product.slug,
    edition: license.edition,
    editionName: license.editionName,
    features: license.features,
    maxMachines: license.maxMachines,
    licenseExpiresAt: license.expiresAt,
  })
    .setProtectedHeader({ alg: "EdDSA", kid: key.kid, typ: certificateType })
    .setSubject(machineId)
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .sign(key.privateKey);
  return { certificate, expiresAt: toIso(exp * 1000) };
}
