import type { EventHandlers } from "../../domain/integrations/process-event.js";
import type { IntegrationProvider } from "../../contracts/vocabulary.js";
import { lemonSqueezyHandlers } from "./lemonsqueezy.js";
import { paddleHandlers } from "./paddle.js";
import { stripeHandlers } from "./stripe.js";

/** The event types Shipkey acts on, per provider, and what each does (docs/selling.md). */
export function saleEventHandlers(): Record<IntegrationProvider, EventHandlers> {
  return {
    stripe: stripeHandlers(),
    paddle: paddleHandlers(),
    lemonsqueezy: lemonSqueezyHandlers(),
  };
}
