import type { CertificateClaims } from "./certificate.js";
import type { OfflineValidation } from "./client-types.js";
import { isoSeconds } from "./answers.js";
import { ShipkeyError } from "./errors.js";

/**
 * How far the clock may be behind a time already seen before an offline check refuses it: wide
 * enough for a clock that is off by hours (a wrong time zone), far short of a clock set back to
 * keep a certificate alive.
 */
const clockSetBackToleranceMs = 24 * 60 * 60 * 1000;

/**
 * The time an offline check reads the certificate at (ms). A clock set back further than a day
 * before a time already seen (a signed answer's Date, the certificate's iat, an earlier offline
 * check) is refused; within that, time never goes below what was already seen, so a clock set
 * back cannot reopen a period.
 */
export function offlineNow(
  claims: CertificateClaims,
  clock: number,
  trustedTime: number | undefined,
  cause: unknown,
): number {
  const seen = Math.max(trustedTime ?? 0, claims.iat * 1000);
  if (clock < seen - clockSetBackToleranceMs) {
    throw new ShipkeyError(
      "CLOCK_SET_BACK",
      `The system clock (${new Date(clock).toISOString()}) is earlier than a time this app has already seen (${new Date(seen).toISOString()}): set the clock right, or go online`,
      { cause },
    );
  }
  return Math.max(clock, seen);
}

/** The offline answer of a verified certificate at `now`; OFFLINE_PERIOD_EXPIRED past its exp. */
export function offlineValidation(
  claims: CertificateClaims,
  now: number,
  cause: unknown,
): OfflineValidation {
  if (now >= claims.exp * 1000) {
    throw new ShipkeyError(
      "OFFLINE_PERIOD_EXPIRED",
      `Offline since too long: the license certificate expired at ${isoSeconds(claims.exp)}`,
      { cause },
    );
  }
  return {
    valid: true,
    offline: true,
    expiresAt: isoSeconds(claims.exp),
    licenseExpiresAt: claims.licenseExpiresAt,
    edition: claims.edition,
    editionName: claims.editionName,
    features: claims.features,
    maxMachines: claims.maxMachines,
  };
}
