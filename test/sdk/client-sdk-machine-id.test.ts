import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";

/**
 * The owner of a machine controls the app's PATH: the SDK must not let the first `ioreg` (or
 * `reg`) on it choose the machine id, nor fall back to an id kept in its (copyable) storage when
 * the OS id cannot be read on a platform that always has one.
 */

const platform = process.platform;
const path = process.env.PATH;
const dirs: string[] = [];
afterEach(() => {
  Object.defineProperty(process, "platform", { value: platform });
  process.env.PATH = path;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  vi.resetModules();
});

function fakeIoreg(script: string): string {
  const dir = mkdtempSync(join(tmpdir(), "shipkey-ioreg-"));
  dirs.push(dir);
  writeFileSync(join(dir, "ioreg"), `#!/bin/sh\n${script}\n`);
  chmodSync(join(dir, "ioreg"), 0o755);
  return dir;
}

/** Imports the SDK afresh, as on macOS, with a fake `ioreg` first on PATH. */
async function onMacWithPathIoreg(script: string) {
  process.env.PATH = `${fakeIoreg(script)}:${path}`;
  Object.defineProperty(process, "platform", { value: "darwin" });
  vi.resetModules();
  return {
    ids: await import("../../packages/client/src/machine-id.js"),
    sdk: await import("../../packages/client/src/index.js"),
  };
}

describe.skipIf(platform === "win32")("the machine id on macOS", () => {
  it("is not chosen by an ioreg placed first on PATH", async () => {
    const victimUuid = "00000000-1111-2222-3333-444444444444"; // another machine's, not secret
    const { ids } = await onMacWithPathIoreg(`echo '  "IOPlatformUUID" = "${victimUuid}"'`);
    const chosen = await ids.machineId("app").catch(() => "no id");
    expect(chosen).not.toBe(ids.hashMachineId("app", victimUuid.toLowerCase()));
  });

  it("an OS id that cannot be read is an error, never the installation id kept in storage", async () => {
    const { sdk } = await onMacWithPathIoreg("exit 1");
    const storage = new sdk.MemoryStorage();
    // What a copied storage file would carry: an installation id from another machine.
    await storage.set("shipkey:app:installation-id", "a".repeat(64));
    const client = new sdk.ShipkeyClient({
      server: "http://127.0.0.1:9",
      productSlug: "app",
      publicKeys: {
        keys: [{ kty: "OKP", crv: "Ed25519", x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" }],
      },
      storage,
    });
    // This machine is not a Mac, so /usr/sbin/ioreg does not exist: the id is unavailable.
    const error = await client.machineId().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(sdk.ShipkeyError);
    expect((error as InstanceType<typeof sdk.ShipkeyError>).code).toBe("MACHINE_ID_UNAVAILABLE");
  });
});
