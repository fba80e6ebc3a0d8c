import type {
  IntegrationEventStatus,
  IntegrationMode,
  IntegrationProvider,
  OrderState,
  QuantityMeaning,
} from "../contracts/vocabulary.js";

/** The payment integrations' tables (migrations 0032 to 0034), as Kysely sees them. */
export interface IntegrationsTable {
  id: string;
  product_id: string;
  provider: IntegrationProvider;
  mode: IntegrationMode;
  description: string | null;
  created_at: number;
  updated_at: number;
}

/** A signing secret of an integration: AES-256-GCM under the master key, base64 each. */
export interface IntegrationSecretsTable {
  id: string;
  integration_id: string;
  iv: string;
  ciphertext: string;
  tag: string;
  created_at: number;
}

export interface IntegrationEventsTable {
  id: string;
  integration_id: string;
  /** The provider's event id (Lemon Squeezy: a digest); unique per integration. */
  event_key: string;
  event_type: string;
  /** The provider's object the event is about (cs_…, txn_…, an order's id); null if none. */
  object_id: string | null;
  /** 1 live, 0 test; null when the event does not say (Paddle). */
  livemode: number | null;
  status: IntegrationEventStatus;
  reason: string | null;
  /** The raw body as received; null once pruned. */
  body: string | null;
  occurred_at: number | null;
  received_at: number;
  processed_at: number | null;
  attempts: number;
  next_attempt_at: number | null;
  retry_until: number | null;
}

export interface IntegrationPricesTable {
  integration_id: string;
  /** The provider's price (Stripe, Paddle) or variant (Lemon Squeezy) id. */
  price_id: string;
  plan_id: string;
  quantity_means: QuantityMeaning;
  created_at: number;
}

export interface IntegrationOrdersTable {
  id: string;
  integration_id: string;
  /** The provider's order: cs_… (Stripe), txn_… (Paddle), an order id (Lemon Squeezy). */
  order_id: string;
  subscription_id: string | null;
  /** What refunds and disputes name: Stripe's payment_intent; Paddle's transaction. */
  payment_id: string | null;
  /** The checkout that started a subscription (Stripe's cs_…), which the thank-you page names. */
  checkout_id: string | null;
  plan_id: string;
  /** JSON array of license ids. */
  license_ids: string;
  customer_email: string | null;
  customer_name: string | null;
  state: OrderState;
  /** Epoch ms: the end of the subscription period paid for. */
  period_end: number | null;
  /** The provider's time of the last change applied (an older one is ignored). */
  applied_at: number;
  created_at: number;
  updated_at: number;
}
