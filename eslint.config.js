// @ts-check
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import regexp from "eslint-plugin-regexp";

export default tseslint.config(
  {
    ignores: [
      "dist/",
      "packages/*/dist/",
      "packages/publish/action/",
      "dist-bench/",
      "node_modules/",
      "test-results/",
      "bench/results/",
      "coverage/",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.strict,
  // No pattern in the service or the packages may backtrack super-linearly: they run on request
  // input, or (the SDK) on what a network answers.
  {
    files: ["src/**/*.ts", "packages/*/src/**/*.ts"],
    plugins: { regexp },
    rules: {
      "regexp/no-super-linear-backtracking": "error",
      "regexp/no-super-linear-move": "error",
    },
  },
  {
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-non-null-assertion": "error",
      "@typescript-eslint/consistent-type-imports": "error",
      "no-console": "error",
    },
  },
  // Front ends write through src/actions only: the domain's writes skip the audit entry and the
  // webhook events their action adds (the license endpoints' activate, deactivate and checkout
  // included; validate writes only its buffered last-seen).
  {
    files: ["src/http/**/*.ts", "src/cli/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["**/domain/**"],
              importNames: [
                "createProduct",
                "deleteProduct",
                "renameProduct",
                "setDeactivationLimit",
                "setMachineLease",
                "setOfflineAllowance",
                "setOfflinePeriod",
                "setTauriPublicKey",
                "setUpdateDelivery",
                "createLicense",
                "updateLicense",
                "deleteLicense",
                "moveLicense",
                "resetMachines",
                "endOfflinePlace",
                "createApiKey",
                "revokeApiKey",
                "revokeApiKeys",
                "createAdmin",
                "insertAdmin",
                "removeAdmin",
                "setAdminPassword",
                "prepareSigningKey",
                "promoteSigningKey",
                "removeSigningKey",
                "resealSigningKeys",
                "deleteRelease",
                "setReleaseYanked",
                "writeRelease",
                "setRollout",
                "setCritical",
                "changeRollout",
                "createWebhookEndpoint",
                "updateWebhookEndpoint",
                "deleteWebhookEndpoint",
                "rotateWebhookSecret",
                "resealWebhookSecrets",
                "redeliverWebhook",
                "sendWebhookTest",
                "createIntegration",
                "updateIntegration",
                "deleteIntegration",
                "addIntegrationSecret",
                "removeIntegrationSecret",
                "resealIntegrationSecrets",
                "receiveInboundEvent",
                "reprocessEvent",
                "retryWaitingEvents",
                "setPriceMapping",
                "removePriceMapping",
                "writeActivation",
                "touchActiveActivation",
                "endMachineActivation",
                "reserveCertificate",
                "endLapsedActivation",
                "createPlan",
                "updatePlan",
                "setPlanArchived",
                "deletePlan",
                "createLicenseFromPlan",
                "enqueueEmail",
                "enqueueLicenseDelivered",
                "enqueuePaymentFailed",
                "enqueueLicenseExpiring",
                "enqueueLicenseSuspended",
                "enqueueLicenseRevoked",
                "requeueEmail",
                "writeEmailOutcome",
                "updateEmailSettings",
              ],
              message: "A front end writes through src/actions (audit entry and events included).",
            },
          ],
        },
      ],
    },
  },
  // Webhook events are emitted by src/actions, in the transaction of the rows they tell about.
  {
    files: ["src/domain/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["**/webhooks/events.js", "./events.js"],
              importNames: ["emitWebhookEvent"],
              message: "Webhook events are emitted by src/actions, with the rows they tell about.",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["bin/**/*.js", "scripts/**/*.js", "eslint.config.js"],
    languageOptions: { globals: { process: "readonly", URL: "readonly" } },
  },
);
