import type { SaleEffects } from "./sale-effects.js";

/**
 * The service's sale effects: plans and the e-mail outbox. Until both are part of the service,
 * no plan is found, so a sale is recorded as ignored ("plan … does not exist") and can be
 * replayed once its plan exists; no message is queued.
 */
export const saleEffects: SaleEffects = {
  findPlan: async () => null,
  createLicense: async (_trx, _actor, planId) => {
    throw new Error(`no plans: cannot make a license from plan ${planId}`);
  },
  licenseDelivered: async () => undefined,
  paymentFailed: async () => undefined,
};
