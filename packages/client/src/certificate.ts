import { compactVerify, decodeProtectedHeader } from "jose";
import { ShipkeyError } from "./errors.js";
import type { KeySource } from "./keys.js";

export const certificateType = "shipkey-license+jwt";

/** The payload of a license certificate (docs/client.md, "License certificates"). */
export interface CertificateClaims {
  /** The machine id the certificate was issued to. */
  sub: string;
  /** The product slug. */
  product: string;
  edition: string | null;
  editionName: string | null;
  features: string[];
  maxMachines: number;
  /** The license's own expiry (ISO 8601), or null when it never expires. */
  licenseExpiresAt: string | null;
  /** Issued at, seconds since the epoch. */
  iat: number;
  /** End of the offline period, seconds since the epoch. */
  exp: number;
}

/**
 * Verifies a certificate's signature against the trusted keys and that it was issued for this
 * product and machine. Does not look at `exp`: the caller compares it with its clock.
 */
export async function verifyCertificate(
  certificate: string,
  keys: KeySource,
  expected: { productSlug: string; machineId: string },
): Promise<CertificateClaims> {
  let payload: Uint8Array;
  try {
    const header = decodeProtectedHeader(certificate);
    if (
      header.alg !== "EdDSA" ||
      header.typ !== certificateType ||
      typeof header.kid !== "string"
    ) {
      throw new Error("not a Shipkey license certificate");
    }
    const key = await keys.find(header.kid);
    if (!key) throw new Error(`no trusted key with kid ${header.kid}`);
    ({ payload } = await compactVerify(certificate, key, { algorithms: ["EdDSA"] }));
  } catch (error) {
    throw new ShipkeyError("SIGNATURE_INVALID", "The license certificate is not validly signed", {
      cause: error,
    });
  }
  const claims = parseClaims(payload);
  if (!claims || claims.product !== expected.productSlug || claims.sub !== expected.machineId) {
    throw new ShipkeyError(
      "SIGNATURE_INVALID",
      "The license certificate is not for this product and machine",
    );
  }
  return claims;
}

function parseClaims(payload: Uint8Array): CertificateClaims | undefined {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== "object") return undefined;
  const claims = value as Record<string, unknown>;
  const { sub, product, iat, exp } = claims;
  if (typeof sub !== "string" || typeof product !== "string") return undefined;
  if (typeof iat !== "number" || typeof exp !== "number") return undefined;
  const features = Array.isArray(claims.features)
    ? claims.features.filter((f): f is string => typeof f === "string")
    : [];
  return {
    sub,
    product,
    edition: stringOrNull(claims.edition),
    editionName: stringOrNull(claims.editionName),
    features,
    maxMachines: typeof claims.maxMachines === "number" ? claims.maxMachines : 0,
    licenseExpiresAt: instantOrNull(claims.licenseExpiresAt),
    iat,
    exp,
  };
}

function stringOrNull(value: unknown): string | null {
  return typeof value === "string" ? value : null;
}

/** An ISO 8601 string as is; a NumericDate (seconds) as ISO 8601; anything else null. */
function instantOrNull(value: unknown): string | null {
  if (typeof value === "number" && Number.isFinite(value)) {
    return new Date(value * 1000).toISOString();
  }
  return stringOrNull(value);
}
