import { SignJWT } from "jose";
import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { toIso } from "../../lib/time.js";
import { requireProduct } from "../products/products.js";
import type { SigningKey } from "../signing/key-ring.js";
import { reserveCertificate } from "./license-certificates.js";
import {
  type LastSeenRecorder,
  type ValidateInput,
  validateLicenseOf,
} from "./validate-license.js";
import type { CheckoutAnswer, CheckoutRequest } from "../../contracts/license-api.js";
import type { NullWhenMissing } from "../../contracts/kit.js";
import { ShipkeyError } from "../../errors.js";
import { emitWebhookEvent } from "../webhooks/events.js";

/** Validate's input, and ttlSeconds (CheckoutRequest), null when missing. */
export type CheckoutInput = ValidateInput & NullWhenMissing<Pick<CheckoutRequest, "ttlSeconds">>;

export type CheckoutResult = Omit<CheckoutAnswer, "success">;

/** The JWS `typ` of a license certificate (docs/client.md, "License certificates"). */
export const certificateType = "shipkey-license+jwt";

/** Finds the product's current signing key (SigningKeyRing.keyFor). */
export type SigningKeyLookup = (
  productSlug: string,
) => SigningKey | null | Promise<SigningKey | null>;

/**
 * Validate's checks, in its order and with its errors (and its last-seen refresh), then the
 * offline limit (403 OFFLINE_LIMIT_REACHED: see reserveCertificate), then a license certificate:
 * a compact JWS (EdDSA) that lets the machine run offline until `exp`, the product's offline
 * period from now, never past the license's own expiry.
 */
export async function checkoutLicense(
  db: Kysely<DB>,
  input: CheckoutInput,
  lastSeen: LastSeenRecorder,
  signingKeyOf: SigningKeyLookup,
  now = Date.now(),
): Promise<CheckoutResult> {
  const { licenseId, result: license } = await validateLicenseOf(db, input, lastSeen, now);
  const product = await requireProduct(db, input.productSlug);
  const key = await signingKeyOf(product.slug);
  if (!key) throw new Error(`product ${product.slug} has no signing key`);
  const iat = Math.floor(now / 1000);
  const period = Math.min(input.ttlSeconds ?? Infinity, product.offlinePeriodSeconds);
  const licenseEnd =
    license.expiresAt === null ? Infinity : Math.floor(Date.parse(license.expiresAt) / 1000);
  const exp = Math.min(iat + period, licenseEnd);
  await reserveCertificate(
    db,
    {
      licenseId,
      licenseKey: input.licenseKey,
      productSlug: product.slug,
      machineId: input.machineId,
      offlineAllowance: product.offlineAllowance,
      issuedAt: iat * 1000,
      expiresAt: exp * 1000,
    },
    now,
  ).catch(async (err: unknown) => {
    if (err instanceof ShipkeyError && err.code === "OFFLINE_LIMIT_REACHED") {
      await emitWebhookEvent(
        db,
        {
          type: "activation.refused",
          product: product.slug,
          data: {
            code: err.code,
            error: err.message,
            licenseKey: input.licenseKey,
            product: product.slug,
            machine: { machineId: input.machineId },
          },
        },
        now,
      );
    }
    throw err;
  });
  const certificate = await new SignJWT({
    product: product.slug,
    edition: license.edition,
    editionName: license.editionName,
    features: license.features,
    maxMachines: license.maxMachines,
    licenseExpiresAt: license.expiresAt,
  })
    .setProtectedHeader({ alg: "EdDSA", kid: key.kid, typ: certificateType })
    .setSubject(input.machineId)
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .sign(key.privateKey);
  return { certificate, expiresAt: toIso(exp * 1000) };
}
