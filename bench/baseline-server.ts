import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * The yardstick: a bare node:http server that reads and parses the same JSON body as validate
 * and answers a JSON object of the same size as validate's answer. Every Shipkey figure is
 * reported as a ratio to this server's, measured in the same run on the same machine.
 */
const answer = JSON.stringify({
  valid: true,
  edition: "pro",
  editionName: "Professional",
  features: ["sync", "export", "themes"],
  expiresAt: "2027-11-21T20:00:00.000Z",
  maxMachines: 6,
  activeMachines: 2,
});

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { licenseKey?: unknown };
    const status = typeof body.licenseKey === "string" ? 200 : 400;
    response.writeHead(status, {
      "content-type": "application/json; charset=utf-8",
      "content-length": Buffer.byteLength(answer),
    });
    response.end(answer);
  });
});
// Match Fastify's keep-alive defaults so connection handling is not what is being compared.
server.keepAliveTimeout = 72_000;
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
