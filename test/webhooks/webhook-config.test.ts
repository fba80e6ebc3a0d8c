import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

const day = 86_400_000;

describe("webhook settings", () => {
  it("WEBHOOKS_ALLOW_PRIVATE, WEBHOOKS_RETENTION_DAYS and WEBHOOKS_DISABLE_AFTER", () => {
    expect(loadConfig({})).toMatchObject({
      webhooksAllowPrivate: false,
      webhookRetentionMs: 30 * day,
      webhooksDisableAfterFailures: 50,
    });
    expect(
      loadConfig({
        WEBHOOKS_ALLOW_PRIVATE: "true",
        WEBHOOKS_RETENTION_DAYS: "7",
        WEBHOOKS_DISABLE_AFTER: "10",
      }),
    ).toMatchObject({
      webhooksAllowPrivate: true,
      webhookRetentionMs: 7 * day,
      webhooksDisableAfterFailures: 10,
    });
    for (const env of [
      { WEBHOOKS_ALLOW_PRIVATE: "yes" },
      { WEBHOOKS_RETENTION_DAYS: "0" },
      { WEBHOOKS_DISABLE_AFTER: "-1" },
    ]) {
      expect(() => loadConfig(env)).toThrow(ConfigError);
    }
  });
});
