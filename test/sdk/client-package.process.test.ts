import { execFile } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerProcess, startServer } from "../helpers/server-process.js";
import { runCli } from "../helpers/cli.js";
import { testEnvironment } from "../helpers/environment.js";
import { packAndInstall } from "../helpers/packages.js";

const run = promisify(execFile);

/**
 * The SDK as a vendor gets it: packed (which builds it), installed from the tarball into a fresh
 * app with no workspace link, and used from there against the compiled server.
 */
describe("@shipkey/client installed from its tarball", () => {
  let dir: string;
  let files: string[];
  let server: ServerProcess;
  let databaseUrl: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "shipkey-package-"));
    ({ files } = await packAndInstall("packages/client", dir, "app"));

    databaseUrl = `sqlite:${join(dir, "server.db")}`;
    expect(
      (await runCli(databaseUrl, ["products", "create", "--slug", "app", "--name", "App"])).code,
    ).toBe(0);
    server = await startServer({ DATABASE_URL: databaseUrl, RATE_LIMITS: "off" });
  }, 180_000);

  afterAll(async () => {
    if (server && server.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await once(server.child, "exit");
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("holds the built code and its types, and nothing else", () => {
    expect(files).toContain("dist/index.js");
    expect(files).toContain("dist/index.d.ts");
    expect(files).toContain("package.json");
    expect(files).toContain("README.md");
    for (const file of files) {
      expect(file).toMatch(/^(dist\/[a-z-]+\.(js|d\.ts)|package\.json|README\.md)$/);
    }
    const manifest = JSON.parse(
      readFileSync(join(dir, "app/node_modules/@shipkey/client/package.json"), "utf8"),
    ) as Record<string, unknown>;
    expect(manifest).toMatchObject({
      name: "@shipkey/client",
      type: "module",
      engines: { node: ">=20" },
      types: "./dist/index.d.ts",
      dependencies: { jose: expect.any(String) },
    });
    expect(manifest.repository).toBeDefined();
    expect(manifest.keywords).toEqual(expect.arrayContaining(["licensing"]));
  });

  it("activates, validates online, then offline from its certificate, from the installed copy", async () => {
    const created = await runCli(databaseUrl, [
      "licenses",
      "create",
      "--product",
      "app",
      "--max-machines",
      "1",
      "--json",
    ]);
    const { licenseKey } = JSON.parse(created.stdout) as { licenseKey: string };
    const jwks = await (await fetch(`${server.baseUrl}/api/products/app/keys`)).text();
    const script = `
      import { FileStorage, ShipkeyClient } from "@shipkey/client";
      const [, , step, server, licenseKey, jwks, storage] = process.argv;
      const shipkey = new ShipkeyClient({
        server, productSlug: "app", publicKeys: JSON.parse(jwks),
        storage: new FileStorage(storage), retry: { attempts: 1 },
      });
      const result = step === "activate"
        ? { activate: await shipkey.activate(licenseKey), validate: await shipkey.validate() }
        : { validate: await shipkey.validate() };
      console.log(JSON.stringify(result));
    `;
    const app = join(dir, "app");
    writeFileSync(join(app, "use.mjs"), script);
    const storage = join(dir, "license.json");
    const use = async (step: string) =>
      JSON.parse(
        (
          await run(
            process.execPath,
            ["use.mjs", step, server.baseUrl, licenseKey, jwks, storage],
            { cwd: app, env: testEnvironment() },
          )
        ).stdout,
      ) as { validate: { valid: boolean; offline: boolean } };

    const online = await use("activate");
    expect(online).toMatchObject({
      activate: { activated: true },
      validate: { valid: true, offline: false, maxMachines: 1 },
    });
    server.child.kill("SIGTERM");
    await once(server.child, "exit");
    const offline = await use("validate");
    expect(offline.validate).toMatchObject({ valid: true, offline: true });
  });
});
