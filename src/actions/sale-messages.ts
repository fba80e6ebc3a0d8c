import type { Transaction } from "kysely";
import type { DB } from "../db/schema.js";
import type { LicenseEmailInput, QueuedEmail } from "../domain/email/messages.js";
import { requireProduct } from "../domain/products/products.js";
import type { License } from "../contracts/licenses.js";

/**
 * Queues one of the customer's messages about `license` (enqueueLicenseDelivered,
 * enqueuePaymentFailed) in the event's transaction, with its product's name; the same
 * `idempotencyKey` (the provider's order or event id) queues one message.
 */
export async function queueMessage(
  trx: Transaction<DB>,
  enqueue: (trx: Transaction<DB>, input: LicenseEmailInput) => Promise<QueuedEmail>,
  license: License,
  customer: { email: string; name: string | null },
  idempotencyKey: string,
): Promise<void> {
  const product = await requireProduct(trx, license.product);
  await enqueue(trx, {
    license,
    product: { id: product.id, name: product.name },
    customerEmail: customer.email,
    customerName: customer.name,
    idempotencyKey,
  });
}
