import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A proxy on loopback that keeps the app's nonce and swaps the request body's licenseKey and
 * machineId for a donor's, then passes the server's genuine answer back.
 */
export async function bodySwappingProxy(
  target: string,
  donor: { licenseKey: string; machineId: string },
) {
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      void (async () => {
        let body: Buffer | undefined;
        if (request.method === "POST") {
          const input = JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>;
          body = Buffer.from(JSON.stringify({ ...input, ...donor }));
        }
        const upstream = await fetch(`${target}${request.url ?? "/"}`, {
          method: request.method ?? "GET",
          headers: {
            "content-type": "application/json",
            "shipkey-nonce": String(request.headers["shipkey-nonce"] ?? ""),
          },
          body,
        });
        const headers: Record<string, string> = {};
        upstream.headers.forEach((value, name) => {
          if (!["content-length", "transfer-encoding", "connection"].includes(name)) {
            headers[name] = value;
          }
        });
        response.sendDate = false;
        response.writeHead(upstream.status, headers);
        response.end(Buffer.from(await upstream.arrayBuffer()));
      })();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return { url: `http://127.0.0.1:${port}`, close };
}
