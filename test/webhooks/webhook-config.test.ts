import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { isPrivateAddress } from "../../src/domain/webhooks/address-guard.js";

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

  it.each([
    ["127.0.0.1", true],
    ["10.0.0.8", true],
    ["172.20.1.1", true],
    ["192.168.1.1", true],
    ["169.254.169.254", true],
    ["100.64.0.1", true],
    ["0.0.0.0", true],
    ["::1", true],
    ["::", true],
    ["::127.0.0.1", true],
    ["::", true],
    ["fe80::1", true],
    ["fd00::1", true],
    ["::ffff:127.0.0.1", true],
    ["::ffff:10.0.0.1", true],
    // As URL writes them: new URL("https://[::ffff:127.0.0.1]/").hostname is [::ffff:7f00:1].
    ["::ffff:7f00:1", true],
    ["93.184.215.14", false],
    ["2606:2800:21f:cb07:6820:80da:af6b:8b2c", false],
    ["::ffff:93.184.215.14", false],
    ["::ffff:5db8:d70e", false],
  ])("%s is private: %s", (address, expected) => {
    expect(isPrivateAddress(address)).toBe(expected);
  });
});
