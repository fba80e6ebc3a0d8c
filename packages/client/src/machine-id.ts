import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { ShipkeyError } from "./errors.js";

/** What reading the OS id needs; injectable so each platform's path is testable anywhere. */
export interface MachineIdSources {
  platform: NodeJS.Platform;
  readFile(path: string): Promise<string>;
  run(command: string, args: string[]): Promise<string>;
}

const nodeSources: MachineIdSources = {
  platform: process.platform,
  readFile: (path) => readFile(path, "utf8"),
  run: (command, args) =>
    new Promise((resolve, reject) => {
      execFile(command, args, { timeout: 5_000, windowsHide: true }, (error, stdout) => {
        if (error) reject(error);
        else resolve(stdout);
      });
    }),
};

const linuxIdFiles = ["/etc/machine-id", "/var/lib/dbus/machine-id"];

/**
 * The OS tools are run by absolute path: a bare name would run the first `ioreg` or `reg` on the
 * PATH, which any user can choose, and with it the machine id.
 */
export const ioregPath = "/usr/sbin/ioreg";
export const regPath = "C:\\Windows\\System32\\reg.exe";

/**
 * Where the OS always has an id (macOS, Windows), failing to read it is an error, never a reason
 * to fall back to an id kept in the app's storage, which a copy of the storage would carry along.
 */
export function osMachineIdRequired(platform: NodeJS.Platform): boolean {
  return platform === "darwin" || platform === "win32";
}

/**
 * The operating system's own id of this machine, unhashed, or undefined when none can be read:
 * Linux `/etc/machine-id` (else `/var/lib/dbus/machine-id`), macOS `IOPlatformUUID` from
 * `/usr/sbin/ioreg`, Windows `MachineGuid` from the registry (64-bit view, through
 * `C:\\Windows\\System32\\reg.exe`). No native module.
 */
export async function readOsMachineId(
  sources: MachineIdSources = nodeSources,
): Promise<string | undefined> {
  try {
    switch (sources.platform) {
      case "darwin": {
        const output = await sources.run(ioregPath, ["-rd1", "-c", "IOPlatformExpertDevice"]);
        return nonEmpty(/"IOPlatformUUID"\s*=\s*"([^"]+)"/.exec(output)?.[1]);
      }
      case "win32": {
        const output = await sources.run(regPath, [
          "query",
          "HKLM\\SOFTWARE\\Microsoft\\Cryptography",
          "/v",
          "MachineGuid",
          "/reg:64",
        ]);
        return nonEmpty(/MachineGuid\s+REG_SZ\s+(\S+)/i.exec(output)?.[1]);
      }
      default: {
        for (const path of linuxIdFiles) {
          const id = nonEmpty(await sources.readFile(path).catch(() => undefined));
          if (id !== undefined) return id;
        }
        return undefined;
      }
    }
  } catch {
    return undefined;
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim().toLowerCase();
  return trimmed ? trimmed : undefined;
}

/** SHA-256 (hex) of the product slug and the OS id: stable, and different for every product. */
export function hashMachineId(productSlug: string, osId: string): string {
  return createHash("sha256").update(`shipkey:${productSlug}:${osId}`).digest("hex");
}

/**
 * A stable id for this machine, hashed with the product slug so the raw OS id never leaves the
 * machine and two products cannot correlate their users. Throws MACHINE_ID_UNAVAILABLE when the
 * OS gives none (a container without /etc/machine-id, for instance).
 */
export async function machineId(
  productSlug: string,
  sources: MachineIdSources = nodeSources,
): Promise<string> {
  const osId = await readOsMachineId(sources);
  if (osId === undefined) {
    throw new ShipkeyError("MACHINE_ID_UNAVAILABLE", "The operating system gives no machine id");
  }
  return hashMachineId(productSlug, osId);
}

/**
 * This machine's id as a client sends it: the app's own (the machineId option), else the OS
 * machine id hashed with the product slug, else (no OS id, e.g. some containers) the hashed
 * installation id the client keeps in storage.
 */
export async function clientMachineId(
  productSlug: string,
  option: string | (() => Promise<string>) | undefined,
  installationId: () => Promise<string>,
): Promise<string> {
  if (typeof option === "string") return option;
  if (typeof option === "function") return option();
  try {
    return await machineId(productSlug);
  } catch (error) {
    // macOS and Windows always have an id: not reading it is an error, not a reason to use one
    // kept in storage (which a copied storage file would carry to another machine).
    if (!(error instanceof ShipkeyError) || osMachineIdRequired(process.platform)) throw error;
  }
  return hashMachineId(productSlug, `installation:${await installationId()}`);
}
