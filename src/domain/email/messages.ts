import type { Transaction } from "kysely";
import type { DB } from "../../db/schema.js";
import { emailFrame } from "./email-settings.js";
import { enqueueEmail } from "./outbox.js";
import { renderEmail, type EmailValues } from "./templates.js";
import type { EmailKind } from "../../contracts/vocabulary.js";

/**
 * What each kind of message is rendered from. The caller (an order's effect, a sweep) passes the
 * license and product it has at hand and a key of its own cause: the same cause twice queues one
 * message (the key stored is `<kind>:<idempotencyKey>`, so one cause may queue one of each kind).
 */
export interface LicenseEmailInput {
  license: { licenseKey: string; expiresAt: string | null; maxMachines: number };
  product: { id: string; name: string };
  customerEmail: string;
  customerName: string | null;
  idempotencyKey: string;
  /** The customer portal's link ({{portalUrl}}); null or absent: none. */
  portalUrl?: string | null;
  now?: number;
}

/** The message queued: its id, and false when the key had queued it already. */
export interface QueuedEmail {
  id: string;
  created: boolean;
}

/** A date as messages write it: the day, UTC (2027-01-31). */
const day = (iso: string) => iso.slice(0, 10);

async function enqueueLicenseEmail(
  trx: Transaction<DB>,
  kind: EmailKind,
  input: LicenseEmailInput,
): Promise<QueuedEmail> {
  const { license, product } = input;
  const frame = await emailFrame(trx, product, kind);
  const values: EmailValues = {
    productName: product.name,
    vendorName: frame.vendorName,
    customerName: input.customerName ?? "",
    customerEmail: input.customerEmail,
    licenseKey: license.licenseKey,
    maxMachines: String(license.maxMachines),
    expiresAt: license.expiresAt === null ? "" : day(license.expiresAt),
    downloadUrl: frame.downloadUrl ?? "",
    portalUrl: input.portalUrl ?? "",
  };
  const rendered = renderEmail(frame.template, values);
  const row = await trx
    .selectFrom("licenses")
    .select("id")
    .where("license_key", "=", license.licenseKey)
    .executeTakeFirst();
  return enqueueEmail(
    trx,
    {
      idempotencyKey: `${kind}:${input.idempotencyKey}`,
      kind,
      productId: product.id,
      licenseId: row?.id ?? null,
      to: input.customerEmail,
      toName: input.customerName,
      ...rendered,
    },
    input.now,
  );
}

/** The key, how to activate it, the download link and the portal's: after a paid order. */
export const enqueueLicenseDelivered = (trx: Transaction<DB>, input: LicenseEmailInput) =>
  enqueueLicenseEmail(trx, "license_delivered", input);

/** A subscription's payment failed; the license keeps working (until its expiry). */
export const enqueuePaymentFailed = (trx: Transaction<DB>, input: LicenseEmailInput) =>
  enqueueLicenseEmail(trx, "payment_failed", input);

/** The license ends within 7 days (license.expiresAt). */
export const enqueueLicenseExpiring = (trx: Transaction<DB>, input: LicenseEmailInput) =>
  enqueueLicenseEmail(trx, "license_expiring", input);

/** The license is suspended (a chargeback, say), in neutral words. */
export const enqueueLicenseSuspended = (trx: Transaction<DB>, input: LicenseEmailInput) =>
  enqueueLicenseEmail(trx, "license_suspended", input);

/** The license is revoked (a refund, say), in neutral words. */
export const enqueueLicenseRevoked = (trx: Transaction<DB>, input: LicenseEmailInput) =>
  enqueueLicenseEmail(trx, "license_revoked", input);
