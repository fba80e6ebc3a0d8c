import type { Transaction } from "kysely";
import type { DB } from "../db/schema.js";
import type { Actor } from "../domain/audit/audit-log.js";
import type { License } from "../contracts/licenses.js";

/**
 * What a sale needs from plans and from e-mail, in one interface: a plan's terms, a license made
 * from a plan, and the customer's messages. Each runs in the event's transaction. The service's
 * implementation is sale-wiring.ts.
 */
export interface PlanTerms {
  id: string;
  /** The product's slug. */
  product: string;
  /** A subscription's license runs to its paid period's end plus graceDays. */
  subscription: boolean;
  graceDays: number;
  onRefund: "revoke" | "suspend" | "nothing";
  onChargeback: "revoke" | "suspend" | "nothing";
}

export interface PlanPurchase {
  /** The license's slots are the plan's × quantity. */
  quantity: number;
  /** A subscription's paid period end (epoch ms); null: the plan's duration from now. */
  periodEndsAt: number | null;
  customerName: string | null;
  customerEmail: string | null;
  /** The order's id (unique per product). */
  externalId: string;
}

export interface CustomerMessage {
  license: License;
  customerEmail: string;
  customerName: string | null;
  /** The cause: the same cause queues one message. */
  idempotencyKey: string;
}

export interface SaleEffects {
  /** A plan by its id; null when there is none. */
  findPlan(trx: Transaction<DB>, planId: string): Promise<PlanTerms | null>;
  /** A license from the plan, audited (license.create) and announced (license.created). */
  createLicense(
    trx: Transaction<DB>,
    actor: Actor,
    planId: string,
    purchase: PlanPurchase,
  ): Promise<License>;
  /** Queues the license-delivered message. */
  licenseDelivered(trx: Transaction<DB>, message: CustomerMessage): Promise<void>;
  /** Queues the payment-failed message. */
  paymentFailed(trx: Transaction<DB>, message: CustomerMessage): Promise<void>;
}
