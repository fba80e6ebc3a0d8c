import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.js";
import { masterKeyFileOf } from "../src/master-key.js";
import { commandContext, runCli } from "./helpers/cli.js";
import { testEnvironment } from "./helpers/environment.js";
import { runCliToExit, type ServerProcess, startServer } from "./helpers/server-process.js";

const dir = mkdtempSync(join(tmpdir(), "shipkey-developer-environment-"));
const shellDatabase = join(dir, "shell.db");

/**
 * A developer's shell that exports the service's configuration, as deploy/shipkey.env.example
 * suggests: a valid value for every variable of docs/configuration.md, each one that would change
 * what a test sees if it got through (another database and master key, a port, one request per
 * hour, logs off), and the two keys the CLI reads.
 */
const shell: Record<string, string> = {
  PORT: "4000",
  HOST: "0.0.0.0",
  DATABASE_URL: `sqlite:${shellDatabase}`,
  DATABASE_POOL_SIZE: "1",
  DATABASE_CONNECT_TIMEOUT: "0",
  SHIPKEY_MASTER_KEY: "00112233445566778899aabbccddeeff".repeat(2),
  TRUST_PROXY: "true",
  PUBLIC_URL: "https://licenses.example.com",
  COOKIE_SECURE: "always",
  ACTIVATION_HISTORY_DAYS: "0",
  LOG_LEVEL: "silent",
  REQUEST_TIMEOUT: "1",
  SHUTDOWN_GRACE: "0",
  RATE_LIMITS: "on",
  RATE_LIMIT_LICENSE: "1/1h",
  RATE_LIMIT_UPDATES: "1/1h",
  RATE_LIMIT_UNKNOWN_KEY: "1/1h",
  RATE_LIMIT_PUBLISH: "1/1h",
  RATE_LIMIT_ADMIN: "1/1h",
  REDIS_URL: "redis://127.0.0.1:9",
  WEBHOOKS_ALLOW_PRIVATE: "true",
  WEBHOOKS_RETENTION_DAYS: "1",
  WEBHOOKS_DISABLE_AFTER: "1",
  SMTP_URL: "smtp://127.0.0.1:9",
  MAIL_FROM: "shell@example.com",
  INTEGRATION_EVENT_BODY_DAYS: "1",
  EMAIL_RETENTION_DAYS: "1",
  PADDLE_SIGNATURE_TOLERANCE: "1",
  SHIPKEY_NEW_MASTER_KEY: "ffeeddccbbaa99887766554433221100".repeat(2),
  SHIPKEY_API_KEY: "shk_from-the-shell",
};

/** The variables docs/configuration.md lists (its table's first column). */
const documented = [
  ...readFileSync("docs/configuration.md", "utf8").matchAll(/^\| `([A-Z][A-Z0-9_]*)` /gm),
].map((match) => match[1] ?? "");

/**
 * The suite's helpers run the server and the CLI on the test's database and nothing else,
 * whatever the shell exports (docs/ARCHITECTURE.md, Conventions).
 */
describe("the test helpers under a shell that exports the service's configuration", () => {
  const saved = new Map<string, string | undefined>();
  let server: ServerProcess | undefined;

  beforeAll(() => {
    for (const [name, value] of Object.entries(shell)) {
      saved.set(name, process.env[name]);
      process.env[name] = value;
    }
  });

  afterAll(async () => {
    for (const [name, value] of saved) {
      if (value === undefined) Reflect.deleteProperty(process.env, name);
      else process.env[name] = value;
    }
    if (server && server.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await once(server.child, "exit");
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("the shell here sets every documented variable, to a value the service accepts", () => {
    expect(documented.length).toBeGreaterThan(20);
    expect(Object.keys(shell)).toEqual(expect.arrayContaining(documented));
    expect(() => loadConfig(process.env)).not.toThrow();
  });

  it("testEnvironment() keeps none of them, and keeps PATH, HOME and TEST_*", () => {
    const env = testEnvironment({ TEST_OWN: "1" });
    for (const name of Object.keys(shell)) expect(env, name).not.toHaveProperty(name);
    expect(env.PATH).toBe(process.env.PATH);
    expect(env.HOME).toBe(process.env.HOME);
    expect(env.TEST_OWN).toBe("1");
    expect(commandContext().env).toEqual(testEnvironment());
  });

  it("the CLI helper creates the key file beside the test's database, with no master key from the shell", async () => {
    const database = join(dir, "cli.db");
    const created = await runCli(`sqlite:${database}`, [
      "products",
      "create",
      "--slug",
      "app",
      "--name",
      "App",
    ]);
    expect(created.code).toBe(0);
    expect(created.stderr).toContain(`created the master key file ${masterKeyFileOf(database)}`);
    expect(existsSync(masterKeyFileOf(database))).toBe(true);
    expect(existsSync(shellDatabase)).toBe(false);
  });

  it("the CLI binary, run by runCliToExit, creates the key file beside the test's database", async () => {
    const database = join(dir, "binary.db");
    const created = await runCliToExit(["products", "create", "--slug", "app", "--name", "App"], {
      DATABASE_URL: `sqlite:${database}`,
    });
    expect(created.code).toBe(0);
    expect(existsSync(masterKeyFileOf(database))).toBe(true);
    expect(existsSync(shellDatabase)).toBe(false);
  });

  it("the server helper starts the server on the test's database, its key file and its own limits", async () => {
    // The database the CLI made: a master key from the shell would not open it.
    server = await startServer({ DATABASE_URL: `sqlite:${join(dir, "cli.db")}` });
    expect(server.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.baseUrl).not.toContain(":4000");
    for (let request = 0; request < 3; request++) {
      const latest = await fetch(
        `${server.baseUrl}/api/updates/app/latest?platform=WINDOWS&arch=X64`,
      );
      // The product the CLI created, and no limit of one request an hour.
      expect({ status: latest.status, body: await latest.json() }).toMatchObject({
        status: 404,
        body: { code: "RELEASE_NOT_FOUND" },
      });
    }
    expect(existsSync(shellDatabase)).toBe(false);
  });
});
