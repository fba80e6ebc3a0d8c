import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import { inTransaction } from "../db/transaction.js";
import { ShipkeyError } from "../errors.js";
import { toIso } from "../lib/time.js";
import {
  type ActivateInput,
  type ActivateResult,
  assertActivationFields,
  touchActiveActivation,
  writeActivation,
} from "../domain/licenses/activate-machine.js";
import {
  type CheckoutInput,
  type CheckoutResult,
  checkoutTerms,
  type SigningKeyLookup,
  signCertificate,
} from "../domain/licenses/checkout-license.js";
import {
  type DeactivatedBy,
  type DeactivateInput,
  endMachineActivation,
  licenseToDeactivate,
} from "../domain/licenses/deactivate-machine.js";
import { reserveCertificate } from "../domain/licenses/license-certificates.js";
import {
  assertLicenseUsable,
  requireLicenseWithActivation,
} from "../domain/licenses/license-record.js";
import {
  dayMs,
  endLapsedActivation,
  leaseCandidates,
  leasedProducts,
  leaseSweepBatchSize,
} from "../domain/licenses/machine-leases.js";
import type { LastSeenRecorder } from "../domain/licenses/validate-license.js";
import { type Actor, recordAudit } from "../domain/audit/audit-log.js";
import { emitWebhookEvent } from "../domain/webhooks/events.js";

// Machines as the license endpoints and the lease sweep change them: the use cases' actions.
// Each writes its rows and their webhook events in one transaction; a refusal sales hears about
// (activation.refused) is an event of its own, after the refused write rolled back. Validate
// writes nothing but its buffered last-seen (domain/licenses/last-seen.ts).

/**
 * Activates a machine: the license's checks, then the request's fields (the spec's order), then
 * the activation and its slot (writeActivation) with machine.activated. Already active: only its
 * last-seen changes; if that activation ended in between, the machine is activated anew.
 */
export async function activateMachine(
  db: Kysely<DB>,
  input: ActivateInput,
  now = Date.now(),
): Promise<ActivateResult> {
  const { license, machineActive } = await requireLicenseWithActivation(db, input);
  const refused = async (err: unknown): Promise<never> => {
    await emitActivationRefusal(db, err, input, license.productSlug, now);
    throw err;
  };
  try {
    assertLicenseUsable(license, input.productSlug, now);
  } catch (err) {
    return refused(err);
  }
  assertActivationFields(input);
  if (machineActive) {
    const existing = await touchActiveActivation(db, license.id, input, now);
    if (existing) return { outcome: "already-activated", activation: existing };
  }
  return inTransaction(db, async (trx) => {
    const result = await writeActivation(trx, license.id, input, now);
    if (result.outcome === "activated") {
      await emitWebhookEvent(
        trx,
        {
          type: "machine.activated",
          product: license.productSlug,
          data: {
            licenseKey: input.licenseKey,
            product: license.productSlug,
            machine: {
              machineId: input.machineId,
              machineName: input.machineName,
              platform: input.platform,
              activatedAt: toIso(now),
            },
            activeMachines: result.activeMachines,
            maxMachines: result.maxMachines,
          },
        },
        now,
      );
    }
    return result;
  }).catch(refused);
}

/** The refusals sales hears about: a usable license's limit, or a license no longer usable. */
const refusalCodes = new Set(["MAX_MACHINES_REACHED", "LICENSE_NOT_ACTIVE", "LICENSE_EXPIRED"]);

async function emitActivationRefusal(
  db: Kysely<DB>,
  err: unknown,
  input: ActivateInput,
  productSlug: string,
  now: number,
): Promise<void> {
  if (!(err instanceof ShipkeyError) || !refusalCodes.has(err.code)) return;
  // A license of another product is refused without telling that product's endpoints.
  if (productSlug !== input.productSlug) return;
  await emitWebhookEvent(
    db,
    {
      type: "activation.refused",
      product: productSlug,
      data: {
        code: err.code,
        error: err.message,
        licenseKey: input.licenseKey,
        product: productSlug,
        machine: {
          machineId: input.machineId,
          machineName: input.machineName,
          platform: input.platform,
        },
      },
    },
    now,
  );
}

/**
 * Ends the machine's activation and frees its slot, with machine.deactivated: by the client
 * (the public endpoint, held to the churn limit) or by an administrator (deactivateMachineByAdmin,
 * in its audited transaction). Returns the machine and the license's product (the request names
 * none).
 */
export async function deactivateMachine(
  db: Kysely<DB>,
  input: DeactivateInput,
  options: { by: DeactivatedBy; now?: number },
): Promise<{ machineId: string; productSlug: string }> {
  const now = options.now ?? Date.now();
  const license = await licenseToDeactivate(db, input);
  await inTransaction(db, async (trx) => {
    await endMachineActivation(trx, license, input.machineId, options.by, now);
    await emitWebhookEvent(
      trx,
      {
        type: "machine.deactivated",
        product: license.productSlug,
        data: {
          licenseKey: input.licenseKey,
          product: license.productSlug,
          machineId: input.machineId,
          by: options.by,
        },
      },
      now,
    );
  });
  return { machineId: input.machineId, productSlug: license.productSlug };
}

/**
 * Validate's checks, in its order and with its errors (and its last-seen refresh), then the
 * offline limit (403 OFFLINE_LIMIT_REACHED: see reserveCertificate) with certificate.issued, then
 * a license certificate that lets the machine run offline until `exp`, the product's offline
 * period from now, never past the license's own expiry.
 */
export async function checkoutLicense(
  db: Kysely<DB>,
  input: CheckoutInput,
  lastSeen: LastSeenRecorder,
  signingKeyOf: SigningKeyLookup,
  now = Date.now(),
): Promise<CheckoutResult> {
  const terms = await checkoutTerms(db, input, lastSeen, signingKeyOf, now);
  const { product, iat, exp } = terms;
  const reservation = {
    licenseId: terms.licenseId,
    machineId: input.machineId,
    offlineAllowance: product.offlineAllowance,
    issuedAt: iat * 1000,
    expiresAt: exp * 1000,
  };
  await inTransaction(db, async (trx) => {
    await reserveCertificate(trx, reservation, now);
    await emitWebhookEvent(
      trx,
      {
        type: "certificate.issued",
        product: product.slug,
        data: {
          licenseKey: input.licenseKey,
          product: product.slug,
          machineId: input.machineId,
          issuedAt: toIso(reservation.issuedAt),
          expiresAt: toIso(reservation.expiresAt),
        },
      },
      now,
    );
  }).catch(async (err: unknown) => {
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
  return signCertificate(terms, input.machineId);
}

const leaseActor: Actor = { type: "service", id: null, label: "machine lease", ip: null };

/**
 * Deactivates every machine whose lease has ended, product by product (only products that set
 * machineLeaseDays). Each machine ends in its own short transaction (endLapsedActivation), with
 * its machine.lease_expired entry and event: of several processes sweeping at once exactly one
 * ends a machine; the others see no row change and move on. Idempotent: a second run finds
 * nothing. The candidates come from the index of active activations by last-seen, so a run reads
 * only the machines past a lease.
 */
export async function expireMachineLeases(
  db: Kysely<DB>,
  options: { now?: number; batchSize?: number } = {},
): Promise<{ expired: number }> {
  const now = options.now ?? Date.now();
  const batchSize = options.batchSize ?? leaseSweepBatchSize;
  let expired = 0;
  for (const product of await leasedProducts(db, null)) {
    const days = product.machine_lease_days ?? 0;
    const cutoff = now - days * dayMs;
    for (;;) {
      const candidates = await leaseCandidates(db, product.id, cutoff, now, batchSize);
      for (const machine of candidates) {
        const ended = await inTransaction(db, async (trx) => {
          if (!(await endLapsedActivation(trx, machine, { cutoff, now }))) return false;
          const lastSeenAt = new Date(machine.last_seen_at).toISOString();
          await recordAudit(
            trx,
            leaseActor,
            "machine.lease_expired",
            { type: "license", id: machine.license_id },
            {
              licenseKey: `…${machine.license_key.slice(-4)}`,
              machineId: machine.machine_id,
              reason: `not seen for ${days} days`,
              lastSeenAt,
            },
            now,
          );
          await emitWebhookEvent(
            trx,
            {
              type: "machine.lease_expired",
              product: product.slug,
              data: {
                licenseKey: machine.license_key,
                product: product.slug,
                machineId: machine.machine_id,
                lastSeenAt,
                leaseDays: days,
              },
            },
            now,
          );
          return true;
        });
        if (ended) expired++;
      }
      if (candidates.length < batchSize) break;
    }
  }
  return { expired };
}
