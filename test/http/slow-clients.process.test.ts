import { once } from "node:events";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/database.js";
import { type ServerProcess, startServer } from "../helpers/server-process.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function server(env: Record<string, string>): Promise<ServerProcess> {
  const testDatabase = await createTestDatabase("sqlite");
  cleanups.push(() => testDatabase.drop());
  const started = await startServer({ DATABASE_URL: testDatabase.url, ...env });
  cleanups.push(async () => {
    if (started.child.exitCode === null && started.child.signalCode === null) {
      started.child.kill("SIGKILL");
      await once(started.child, "exit");
    }
  });
  return started;
}

/** A client that sends `text` and then nothing; resolves with what it got when the server hung up. */
async function stallingClient(baseUrl: string, text: string) {
  const { port } = new URL(baseUrl);
  const socket = net.connect(Number(port), "127.0.0.1");
  await once(socket, "connect");
  socket.write(text);
  let received = "";
  socket.on("data", (chunk: Buffer) => (received += chunk.toString()));
  const startedAt = Date.now();
  const closed = new Promise<{ received: string; afterMs: number }>((resolve) => {
    socket.once("close", () => resolve({ received, afterMs: Date.now() - startedAt }));
  });
  socket.on("error", () => {});
  cleanups.push(async () => void socket.destroy());
  return closed;
}

const partialBody =
  "POST /api/license/validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
  'Content-Length: 100\r\n\r\n{"licenseKey":';

describe("slow clients", () => {
  it("a request whose body stops arriving is answered 408 and closed after REQUEST_TIMEOUT", async () => {
    const { baseUrl } = await server({ REQUEST_TIMEOUT: "2" });
    const clients = await Promise.all(
      Array.from({ length: 20 }, () => stallingClient(baseUrl, partialBody)),
    );
    for (const client of clients) {
      expect(client.afterMs).toBeGreaterThanOrEqual(1500);
      expect(client.afterMs).toBeLessThan(30_000);
      expect(client.received).toMatch(/^HTTP\/1\.1 408 /);
      expect(client.received).toContain('"code":"REQUEST_TIMEOUT"');
    }
  });

  it("headers that stop arriving are cut off too", async () => {
    const { baseUrl } = await server({ REQUEST_TIMEOUT: "2" });
    const client = await stallingClient(baseUrl, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    expect(client.afterMs).toBeLessThan(30_000);
  });

  it("SIGTERM closes a stalled connection after SHUTDOWN_GRACE and exits 0", async () => {
    const started = await server({ REQUEST_TIMEOUT: "300", SHUTDOWN_GRACE: "1" });
    const client = stallingClient(started.baseUrl, partialBody);
    // The server has read the headers once a request to it completes on another connection.
    expect((await fetch(`${started.baseUrl}/healthz`)).status).toBe(200);
    const stoppedAt = Date.now();
    started.child.kill("SIGTERM");
    const [code] = (await once(started.child, "exit")) as [number | null];
    expect(code).toBe(0);
    expect(Date.now() - stoppedAt).toBeLessThan(30_000);
    expect((await client).afterMs).toBeLessThan(30_000);
    expect(started.output()).toContain("shutdown grace period over");
  });
});
