import type { Transaction } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import { lockLicense } from "./license-record.js";
import { canActivateNow } from "./offline-places.js";

export interface CertificateReservation {
  licenseId: string;
  machineId: string;
  /** The machines beyond the license's maxMachines that may hold a certificate at once. */
  offlineAllowance: number;
  /** The certificate's iat and exp, in epoch milliseconds. */
  issuedAt: number;
  expiresAt: number;
}

/**
 * Records that the machine is about to hold a certificate until `expiresAt`, or throws 403
 * MACHINE_NOT_ACTIVATED when the machine was deactivated since validate's check, or 403
 * OFFLINE_LIMIT_REACHED when the other machines of the license holding an unexpired certificate
 * already number maxMachines + the offline allowance. A deactivated machine's certificate keeps
 * counting until its exp; a machine refreshing its own never counts twice (its row keeps the
 * later exp).
 *
 * Exact under concurrency on both databases: in the caller's transaction, it first writes the
 * license row (a no-op), which holds every other reservation for the license until that
 * transaction commits, and reads maxMachines under that lock.
 */
export async function reserveCertificate(
  trx: Transaction<DB>,
  input: CertificateReservation,
  now: number,
): Promise<void> {
  const [license] = (await lockLicense(trx, { licenseId: input.licenseId })).rows;
  if (!license) throw ShipkeyError.spec("LICENSE_NOT_FOUND");
  // Deactivated since validate passed: a certificate now would be a new offline place.
  const active = await trx
    .selectFrom("activations")
    .select("id")
    .where("license_id", "=", input.licenseId)
    .where("machine_id", "=", input.machineId)
    .where("deactivated_at", "is", null)
    .executeTakeFirst();
  if (!active) {
    throw ShipkeyError.spec("MACHINE_NOT_ACTIVATED", {
      canActivate: await canActivateNow(trx, input.licenseId, now, input.machineId),
    });
  }
  const { held } = await trx
    .selectFrom("license_certificates")
    .select((eb) => eb.fn.countAll<number | string | bigint>().as("held"))
    .where("license_id", "=", input.licenseId)
    .where("machine_id", "!=", input.machineId)
    .where("expires_at", ">", now)
    .executeTakeFirstOrThrow();
  if (Number(held) >= license.max_machines + input.offlineAllowance) {
    throw ShipkeyError.spec("OFFLINE_LIMIT_REACHED");
  }
  await trx
    .insertInto("license_certificates")
    .values({
      license_id: input.licenseId,
      machine_id: input.machineId,
      issued_at: input.issuedAt,
      expires_at: input.expiresAt,
    })
    .onConflict((oc) =>
      oc.columns(["license_id", "machine_id"]).doUpdateSet((eb) => ({
        issued_at: eb.ref("excluded.issued_at"),
        // A shorter certificate (a smaller ttlSeconds) never hides a longer one still valid.
        expires_at: eb
          .case()
          .when("excluded.expires_at", ">", eb.ref("license_certificates.expires_at"))
          .then(eb.ref("excluded.expires_at"))
          .else(eb.ref("license_certificates.expires_at"))
          .end(),
      })),
    )
    .execute();
}
