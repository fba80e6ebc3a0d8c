import cookie from "@fastify/cookie";
import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import type { LastSeenRecorder } from "../domain/licenses/validate-license.js";
import type { UsageCounts } from "../domain/releases/usage-counts.js";
import { countLicenseAnswers } from "./license-counts.js";
import type { Signing } from "../domain/signing/key-ring.js";
import { registerActor } from "./admin-auth.js";
import { typed } from "./contract-route.js";
import { signLicenseAnswers } from "./response-signing.js";
import { productKeysRoute } from "./routes/product-keys.js";
import type { DatabaseFaults } from "./database-faults.js";
import type { RateLimitHooks } from "./rate-limits.js";
import { registerIdempotency } from "./idempotency.js";
import { checkPublicUrl, rejectNulInput, rejectNulInUrl } from "./request-fields.js";
import { activateMachineRoute } from "./routes/activate-machine.js";
import { adminApiKeyRoutes } from "./routes/admin/api-keys.js";
import { adminAuditRoutes } from "./routes/admin/audit.js";
import { adminLicenseRoutes } from "./routes/admin/licenses.js";
import { adminPlanRoutes } from "./routes/admin/plans.js";
import { adminProductRoutes } from "./routes/admin/products.js";
import { adminReleaseRoutes } from "./routes/admin/releases.js";
import { adminWebhookRoutes } from "./routes/admin/webhooks.js";
import { adminIntegrationRoutes } from "./routes/admin/integrations.js";
import { type IntegrationOptions, integrationWebhookRoutes } from "./routes/integration-webhook.js";
import type { WebhookWorker } from "./webhook-delivery.js";
import type { MailWorker } from "./email-delivery.js";
import { adminEmailRoutes } from "./routes/admin/emails.js";
import { checkoutLicenseRoute } from "./routes/checkout-license.js";
import { checkoutClaimRoute } from "./routes/checkout-claim.js";
import { deactivateMachineRoute } from "./routes/deactivate-machine.js";
import { healthRoutes } from "./routes/health.js";
import { publishReleaseRoute } from "./routes/publish-release.js";
import { validateLicenseRoute } from "./routes/validate-license.js";
import { electronFeedRoute } from "./routes/updates/electron.js";
import { downloadRoutes } from "./routes/updates/downloads.js";
import { noCache } from "./routes/updates/feed-request.js";
import { latestFeedRoute } from "./routes/updates/latest.js";
import { sparkleFeedRoute } from "./routes/updates/sparkle.js";
import { squirrelMacFeedRoute } from "./routes/updates/squirrel-mac.js";
import { tauriFeedRoute } from "./routes/updates/tauri.js";

/** The whole HTTP surface, in one place. */
export function registerRoutes(
  app: FastifyInstance,
  db: Kysely<DB>,
  {
    lastSeen,
    counts,
    faults,
    limits,
    signing,
    webhooks,
    mail,
    integrations,
  }: {
    lastSeen: LastSeenRecorder;
    counts: UsageCounts;
    faults: DatabaseFaults;
    limits: RateLimitHooks | null;
    signing: Signing;
    webhooks: WebhookWorker;
    mail: MailWorker;
    integrations: IntegrationOptions;
  },
): void {
  registerActor(app);
  healthRoutes(typed(app), db, faults);
  // A person who opens the server's address lands on the dashboard's sign-in.
  app.get("/", { schema: { hide: true } }, (_request, reply) => reply.redirect("/admin", 302));

  // Each group in a scope of its own, so its hooks (rate limits, admin checks) run only there.
  void app.register(async (license) => {
    if (limits) {
      license.addHook("onRequest", limits.perAddress("license"));
      license.addHook("onError", limits.countUnknownKey);
    }
    license.addHook("preValidation", async (request) => rejectNulInUrl(request));
    signLicenseAnswers(license, signing.ring);
    countLicenseAnswers(license, counts);
    const routes = typed(license);
    activateMachineRoute(routes, db);
    validateLicenseRoute(routes, db, lastSeen);
    deactivateMachineRoute(routes, db);
    checkoutLicenseRoute(routes, db, lastSeen, (slug) => signing.ring.keyFor(slug));
  });

  void app.register(async (publish) => {
    if (limits) {
      publish.addHook("onRequest", limits.unknownKeyBudget.onRequest);
      publish.addHook("onSend", limits.unknownKeyBudget.onSend);
      publish.addHook("onError", limits.countUnknownKey);
      publish.addHook("preParsing", limits.perCaller("publish"));
    }
    publish.addHook("preValidation", async (request) => rejectNulInUrl(request));
    publishReleaseRoute(typed(publish), db);
  });

  // The update feeds and downloads: public reads (unless the product wants a license),
  // revalidated on every use, limited per address. A guessed license key spends the unknown-key
  // budget.
  void app.register(async (updates) => {
    updates.addHook("onRequest", noCache);
    updates.addHook("preValidation", async (request) => checkPublicUrl(request, "licenseKey"));
    if (limits) {
      updates.addHook("onRequest", limits.perAddress("updates"));
      updates.addHook("onError", limits.countUnknownKey);
    }
    const deps = { db, counts };
    const routes = typed(updates);
    tauriFeedRoute(routes, deps);
    squirrelMacFeedRoute(routes, deps);
    electronFeedRoute(routes, deps);
    sparkleFeedRoute(routes, deps);
    latestFeedRoute(routes, deps);
    downloadRoutes(routes, deps);
    productKeysRoute(routes, db, signing.ring);
  });

  // The vendor's thank-you page: limited per address as the license endpoints are.
  void app.register(async (claims) => {
    if (limits) claims.addHook("onRequest", limits.perAddress("license"));
    claims.addHook("preValidation", async (request) => checkPublicUrl(request));
    checkoutClaimRoute(typed(claims), db);
  });

  // Payment providers' webhooks: their raw bodies are parsed in this scope only.
  void app.register(async (providers) => {
    providers.addHook("preValidation", async (request) => rejectNulInUrl(request));
    integrationWebhookRoutes(providers, db, signing.masterKey, integrations);
  });

  void app.register(async (admin) => {
    await admin.register(cookie); // the dashboard session (admin-auth.ts)
    // Answers (a new API key's secret among them) are never cached nor sniffed, errors included.
    admin.addHook("onRequest", (_request, reply, done) => {
      reply.header("cache-control", "no-store").header("x-content-type-options", "nosniff");
      done();
    });
    if (limits) {
      admin.addHook("onRequest", limits.unknownKeyBudget.onRequest);
      admin.addHook("onSend", limits.unknownKeyBudget.onSend);
      admin.addHook("onError", limits.countUnknownKey);
      admin.addHook("preParsing", limits.perCaller("admin"));
    }
    admin.addHook("preValidation", async (request) => rejectNulInput(request));
    registerIdempotency(admin, db, faults);
    const routes = typed(admin);
    adminProductRoutes(routes, db, signing);
    adminLicenseRoutes(routes, db);
    adminPlanRoutes(routes, db);
    adminReleaseRoutes(routes, db);
    adminApiKeyRoutes(routes, db);
    adminAuditRoutes(routes, db);
    adminWebhookRoutes(routes, db, signing.masterKey, webhooks);
    adminEmailRoutes(routes, db, mail);
    adminIntegrationRoutes(routes, db, signing.masterKey, integrations);
  });
}
