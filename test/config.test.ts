import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";

// The server prints a ConfigError as one line and exits 1 (test/http/server.process.test.ts).
describe("bad configuration is one ConfigError naming the setting", () => {
  it.each([
    ["PORT=abc", { PORT: "abc" }, "PORT must be an integer from 0 to 65535"],
    ["PORT=70000", { PORT: "70000" }, "PORT must be an integer from 0 to 65535"],
    ["LOG_LEVEL=loud", { LOG_LEVEL: "loud" }, "LOG_LEVEL must be one of"],
    [
      "TRUST_PROXY=yes please",
      { TRUST_PROXY: "yes please" },
      "TRUST_PROXY must be true, false or a list",
    ],
    [
      "DATABASE_URL=mysql://x",
      { DATABASE_URL: "mysql://x" },
      "DATABASE_URL must start with sqlite: or postgres://",
    ],
    [
      "DATABASE_POOL_SIZE=0",
      { DATABASE_POOL_SIZE: "0" },
      "DATABASE_POOL_SIZE must be an integer from 1 to 1000",
    ],
    [
      "DATABASE_CONNECT_TIMEOUT=soon",
      { DATABASE_CONNECT_TIMEOUT: "soon" },
      "DATABASE_CONNECT_TIMEOUT must be an integer from 0 to 3600",
    ],
    ["REQUEST_TIMEOUT=0", { REQUEST_TIMEOUT: "0" }, "REQUEST_TIMEOUT must be an integer from 1"],
    ["SHUTDOWN_GRACE=-1", { SHUTDOWN_GRACE: "-1" }, "SHUTDOWN_GRACE must be an integer from 0"],
    ["COOKIE_SECURE=yes", { COOKIE_SECURE: "yes" }, "COOKIE_SECURE must be one of auto"],
    ["RATE_LIMITS=maybe", { RATE_LIMITS: "maybe" }, "RATE_LIMITS must be on or off"],
    [
      "RATE_LIMIT_LICENSE=lots",
      { RATE_LIMIT_LICENSE: "lots" },
      "RATE_LIMIT_LICENSE must be <requests>/<window>",
    ],
    ["REDIS_URL=http://x", { REDIS_URL: "http://x" }, "REDIS_URL must be a redis://"],
  ])("%s", (_label, env, message) => {
    const error = (() => {
      try {
        loadConfig(env);
      } catch (err) {
        return err;
      }
      return null;
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain(message);
    expect((error as ConfigError).message).not.toContain("\n");
  });

  it("no settings at all is a valid configuration", () => {
    expect(() => loadConfig({})).not.toThrow();
  });
});
