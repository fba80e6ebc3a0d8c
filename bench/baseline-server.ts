import { createServer } from "node:http";

/**
 * The yardstick: a bare node:http server that reads and parses the same JSON body as validate
 * and answers a JSON object of the same size as validate's answer. Listens on 127.0.0.1 and PORT.
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
    let licenseKey: unknown;
    try {
      licenseKey = (JSON.parse(Buffer.concat(chunks).toString("utf8")) as { licenseKey?: unknown })
        .licenseKey;
    } catch {
      // not JSON (a readiness probe): 400
    }
    response.writeHead(typeof licenseKey === "string" ? 200 : 400, {
      "content-type": "application/json; charset=utf-8",
      "content-length": Buffer.byteLength(answer),
    });
    response.end(answer);
  });
});
// Match Fastify's keep-alive defaults so connection handling is not what is being compared.
server.keepAliveTimeout = 72_000;
server.listen(Number(process.env.PORT), "127.0.0.1");
process.on("SIGTERM", () => server.close(() => process.exit(0)));
