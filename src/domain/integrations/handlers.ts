import type { IntegrationProvider } from "../../contracts/vocabulary.js";
import type { EventHandlers } from "./process-event.js";

/** The event types Shipkey acts on, per provider, and what each does (docs/selling.md). */
const handlers: Record<IntegrationProvider, EventHandlers> = {
  stripe: {},
  paddle: {},
  lemonsqueezy: {},
};

export const handlersOf = (provider: IntegrationProvider): EventHandlers => handlers[provider];
