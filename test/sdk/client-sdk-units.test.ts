import { once } from "node:events";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  hashMachineId,
  machineId,
  type MachineIdSources,
  MemoryStorage,
  FileStorage,
  readOsMachineId,
  ShipkeyError,
} from "../../packages/client/src/index.js";
import { backoff, defaultRetry, retryAfterMs, send } from "../../packages/client/src/http.js";
import type { ServerErrorCode } from "../../packages/client/src/errors.js";
import { parseSignatureHeader } from "../../packages/client/src/signature.js";
import { type ErrorCode, httpStatusByCode } from "../../src/errors.js";

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function sources(
  platform: NodeJS.Platform,
  files: Record<string, string>,
  commands: Record<string, string> = {},
): MachineIdSources & { ran: string[] } {
  const ran: string[] = [];
  return {
    platform,
    ran,
    readFile: async (path) => {
      const content = files[path];
      if (content === undefined) throw Object.assign(new Error("ENOENT"), { code: "ENOENT" });
      return content;
    },
    run: async (command, args) => {
      const line = [command, ...args].join(" ");
      ran.push(line);
      const output = commands[command];
      if (output === undefined) throw new Error(`${command}: not found`);
      return output;
    },
  };
}

describe("machineId", () => {
  it("Linux: /etc/machine-id, trimmed", async () => {
    const id = await readOsMachineId(
      sources("linux", { "/etc/machine-id": "0123456789abcdef0123456789abcdef\n" }),
    );
    expect(id).toBe("0123456789abcdef0123456789abcdef");
  });

  it("Linux: falls back to /var/lib/dbus/machine-id when /etc/machine-id is missing or empty", async () => {
    const dbus = { "/var/lib/dbus/machine-id": "feedfacefeedfacefeedfacefeedface\n" };
    expect(await readOsMachineId(sources("linux", dbus))).toBe("feedfacefeedfacefeedfacefeedface");
    expect(await readOsMachineId(sources("linux", { "/etc/machine-id": "\n", ...dbus }))).toBe(
      "feedfacefeedfacefeedfacefeedface",
    );
    expect(await readOsMachineId(sources("linux", {}))).toBeUndefined();
  });

  it("macOS: IOPlatformUUID from /usr/sbin/ioreg -rd1 -c IOPlatformExpertDevice (by absolute path)", async () => {
    const ioreg = [
      "+-o MacBookPro18,3  <class IOPlatformExpertDevice, id 0x100000110, registered>",
      "  {",
      '    "IOPlatformSerialNumber" = "C02XXXXXXX"',
      '    "IOPlatformUUID" = "8A1B2C3D-4E5F-6789-ABCD-EF0123456789"',
      "  }",
    ].join("\n");
    const darwin = sources("darwin", {}, { "/usr/sbin/ioreg": ioreg });
    expect(await readOsMachineId(darwin)).toBe("8a1b2c3d-4e5f-6789-abcd-ef0123456789");
    expect(darwin.ran).toEqual(["/usr/sbin/ioreg -rd1 -c IOPlatformExpertDevice"]);
  });

  it("Windows: MachineGuid from the registry's 64-bit view, through System32's reg.exe", async () => {
    const reg = [
      "",
      "HKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Cryptography",
      "    MachineGuid    REG_SZ    3f2504e0-4f89-11d3-9a0c-0305e82c3301",
      "",
    ].join("\r\n");
    const windows = sources("win32", {}, { "C:\\Windows\\System32\\reg.exe": reg });
    expect(await readOsMachineId(windows)).toBe("3f2504e0-4f89-11d3-9a0c-0305e82c3301");
    expect(windows.ran).toEqual([
      "C:\\Windows\\System32\\reg.exe query HKLM\\SOFTWARE\\Microsoft\\Cryptography /v MachineGuid /reg:64",
    ]);
  });

  it("a failing command or unreadable output gives no id, and machineId() says so", async () => {
    expect(await readOsMachineId(sources("darwin", {}))).toBeUndefined();
    expect(
      await readOsMachineId(
        sources("win32", {}, { "C:\\Windows\\System32\\reg.exe": "ERROR: not found" }),
      ),
    ).toBeUndefined();
    const error = await machineId("app", sources("darwin", {})).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ShipkeyError);
    expect((error as ShipkeyError).code).toBe("MACHINE_ID_UNAVAILABLE");
  });

  it("is a SHA-256 of the product slug and the OS id: stable, per product, raw id not visible", async () => {
    const linux = sources("linux", { "/etc/machine-id": "0123456789abcdef0123456789abcdef" });
    const a = await machineId("app", linux);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(await machineId("app", linux)).toBe(a);
    expect(await machineId("other-app", linux)).not.toBe(a);
    expect(a).not.toContain("0123456789abcdef");
    expect(hashMachineId("app", "0123456789abcdef0123456789abcdef")).toBe(a);
  });

  it("reads this machine's real id the same way twice (no native module)", async () => {
    const real = await readOsMachineId();
    if (real === undefined) return; // a container without /etc/machine-id: covered above
    expect(await machineId("app")).toBe(await machineId("app"));
  });
});

describe("storage", () => {
  function tempFile(): string {
    const dir = mkdtempSync(join(tmpdir(), "shipkey-sdk-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return join(dir, "nested", "license.json");
  }

  it("MemoryStorage: get, set, delete", async () => {
    const storage = new MemoryStorage();
    expect(await storage.get("a")).toBeUndefined();
    await storage.set("a", "1");
    expect(await storage.get("a")).toBe("1");
    await storage.delete("a");
    expect(await storage.get("a")).toBeUndefined();
  });

  it("FileStorage: one JSON file, mode 0600, created with its directory", async () => {
    const path = tempFile();
    const storage = new FileStorage(path);
    expect(await storage.get("a")).toBeUndefined();
    await storage.set("a", "1");
    await storage.set("b", "two");
    expect(JSON.parse(readFileSync(path, "utf8"))).toEqual({ a: "1", b: "two" });
    if (process.platform !== "win32") expect(statSync(path).mode & 0o777).toBe(0o600);
    await storage.delete("a");
    expect(await new FileStorage(path).get("a")).toBeUndefined();
    expect(await new FileStorage(path).get("b")).toBe("two");
  });

  it("FileStorage: concurrent writes all land, and no temporary file is left", async () => {
    const path = tempFile();
    const storage = new FileStorage(path);
    await Promise.all(Array.from({ length: 20 }, (_, i) => storage.set(`k${i}`, String(i))));
    for (let i = 0; i < 20; i++) expect(await storage.get(`k${i}`)).toBe(String(i));
    expect(readdirSync(join(path, ".."))).toEqual(["license.json"]);
  });

  it("FileStorage: a corrupt file reads as empty and is replaced by the next write", async () => {
    const path = tempFile();
    const storage = new FileStorage(path);
    await storage.set("a", "1");
    writeFileSync(path, '{"a": "1", "b"');
    expect(await storage.get("a")).toBeUndefined();
    await storage.set("c", "3");
    expect(JSON.parse(readFileSync(path, "utf8"))).toEqual({ c: "3" });
  });

  it("FileStorage: keys named like Object properties are plain keys", async () => {
    const storage = new FileStorage(tempFile());
    expect(await storage.get("constructor")).toBeUndefined();
    expect(await storage.get("__proto__")).toBeUndefined();
  });
});

describe("retries", () => {
  interface Script {
    status: number;
    headers?: Record<string, string>;
    drop?: boolean;
  }

  /** A real HTTP server answering from a script, recording each request's nonce. */
  async function scriptedServer(script: Script[]) {
    const nonces: string[] = [];
    const server = http.createServer((request, response) => {
      nonces.push(String(request.headers["shipkey-nonce"]));
      request.resume();
      const step = script[Math.min(nonces.length - 1, script.length - 1)] ?? { status: 500 };
      if (step.drop) {
        request.socket.destroy();
        return;
      }
      response.writeHead(step.status, { "content-type": "application/json", ...step.headers });
      response.end(JSON.stringify({ status: step.status }));
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
    const { port } = server.address() as AddressInfo;
    return { url: new URL(`http://127.0.0.1:${port}/api/license/validate?x=1`), nonces };
  }

  function options(sleeps: number[], attempts = 3) {
    return {
      fetch: globalThis.fetch,
      retry: { ...defaultRetry, attempts },
      sleep: async (ms: number) => {
        sleeps.push(ms);
      },
      random: () => 0.5,
    };
  }

  it("retries 503 with a fresh nonce per attempt and honours Retry-After", async () => {
    const { url, nonces } = await scriptedServer([
      { status: 503, headers: { "retry-after": "2" } },
      { status: 503 },
      { status: 200 },
    ]);
    const sleeps: number[] = [];
    const answer = await send(url, { method: "POST", body: {} }, options(sleeps));
    expect(answer.status).toBe(200);
    expect(answer.path).toBe("/api/license/validate");
    expect(nonces).toHaveLength(3);
    expect(new Set(nonces).size).toBe(3);
    expect(answer.nonce).toBe(nonces[2]);
    expect(sleeps).toEqual([2000, backoff(2, defaultRetry, () => 0.5)]);
  });

  it("retries network errors, then gives NETWORK_ERROR after the bounded attempts", async () => {
    const { url, nonces } = await scriptedServer([{ status: 200, drop: true }]);
    const sleeps: number[] = [];
    const error = await send(url, { method: "POST", body: {} }, options(sleeps, 4)).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ShipkeyError);
    expect((error as ShipkeyError).code).toBe("NETWORK_ERROR");
    expect(nonces).toHaveLength(4);
    expect(sleeps).toHaveLength(3);
  });

  it("never retries a 4xx (not even 429)", async () => {
    for (const status of [400, 403, 404, 429]) {
      const { url, nonces } = await scriptedServer([{ status }, { status: 200 }]);
      const answer = await send(url, { method: "POST", body: {} }, options([]));
      expect(answer.status).toBe(status);
      expect(nonces).toHaveLength(1);
    }
  });

  it("gives the last 503 when the retries are spent, and does not wait for a long Retry-After", async () => {
    const spent = await scriptedServer([{ status: 503 }]);
    const answer = await send(spent.url, { method: "POST", body: {} }, options([], 2));
    expect(answer.status).toBe(503);
    expect(spent.nonces).toHaveLength(2);

    const long = await scriptedServer([{ status: 503, headers: { "retry-after": "3600" } }]);
    const sleeps: number[] = [];
    expect((await send(long.url, { method: "GET" }, options(sleeps))).status).toBe(503);
    expect(long.nonces).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it("backoff doubles up to its cap, with jitter between half and all of it", () => {
    const retry = { ...defaultRetry, baseDelayMs: 100, maxDelayMs: 1000 };
    expect([1, 2, 3, 4, 5].map((n) => backoff(n, retry, () => 1))).toEqual([
      100, 200, 400, 800, 1000,
    ]);
    expect(backoff(3, retry, () => 0)).toBe(200);
    expect(retryAfterMs("7", 0)).toBe(7000);
    expect(retryAfterMs(new Date(60_000).toUTCString(), 0)).toBe(60_000);
    expect(retryAfterMs("soon", 0)).toBeUndefined();
  });
});

describe("Shipkey-Signature header", () => {
  it("parses the four fields and refuses anything else", () => {
    expect(
      parseSignatureHeader('keyid="k1", algorithm="ed25519", version="2", signature="AbC+/="'),
    ).toEqual({ keyid: "k1", algorithm: "ed25519", version: "2", signature: "AbC+/=" });
    // Version 1 had no version field: it is not read as version 2.
    expect(parseSignatureHeader('keyid="k1", algorithm="ed25519", signature="x"')).toBeUndefined();
    expect(parseSignatureHeader('keyid="k1", algorithm="ed25519", version="2"')).toBeUndefined();
    expect(
      parseSignatureHeader(
        'keyid="k1", keyid="k2", algorithm="ed25519", version="2", signature="x"',
      ),
    ).toBeUndefined();
    expect(
      parseSignatureHeader('keyid="k1" algorithm="ed25519" version="2" signature="x" junk'),
    ).toBeUndefined();
  });
});

describe("the SDK's list of server error codes", () => {
  it("names only codes the server has (the type-check fails otherwise)", () => {
    const serverCode = (code: ServerErrorCode): ErrorCode => code;
    expect(httpStatusByCode[serverCode("UPDATES_LICENSE_REQUIRED")]).toBe(401);
  });
});
