import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { type AddressInfo, createServer as createTcpServer, type Socket } from "node:net";

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A real HTTP receiver on loopback. Each request is recorded, then answered by `answer` (the
 * status to send, or "hang" to never answer).
 */
export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  answer: (request: ReceivedWebhook) => number | "hang";
  close(): Promise<void>;
}

export async function startReceiver(): Promise<WebhookReceiver> {
  const receiver: WebhookReceiver = {
    url: "",
    received: [],
    answer: () => 204,
    close: async () => undefined,
  };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const hit = { headers: request.headers, body: Buffer.concat(chunks).toString("utf8") };
      receiver.received.push(hit);
      const status = receiver.answer(hit);
      if (status === "hang") return;
      response.statusCode = status;
      response.end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  receiver.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

/** A receiver that accepts TCP connections and never answers on them. */
export interface Tarpit {
  url: string;
  /** Connections accepted so far. */
  accepted: number;
  /** Connections open at most at any one time. */
  mostOpen: number;
  /** Closes every connection and the server. */
  close(): Promise<void>;
}

export async function startTarpit(): Promise<Tarpit> {
  const sockets = new Set<Socket>();
  const tarpit: Tarpit = { url: "", accepted: 0, mostOpen: 0, close: async () => undefined };
  const server = createTcpServer((socket) => {
    tarpit.accepted++;
    sockets.add(socket);
    tarpit.mostOpen = Math.max(tarpit.mostOpen, sockets.size);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    // Reads what it is sent, answers nothing.
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  tarpit.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  tarpit.close = () =>
    new Promise((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  return tarpit;
}

/** A loopback port nothing listens on (connections to it are refused). */
export async function closedPortUrl(): Promise<string> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/hooks`;
}

/**
 * The worker's clock, which the tests move ahead by hand: real time plus what they advanced, so
 * events recorded at real time are due at once and retries only when the test says so.
 */
export function manualClock() {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    advance: (ms: number) => {
      offset += ms;
    },
    /** Back to real time (receivers check webhook-timestamp against theirs). */
    reset: () => {
      offset = 0;
    },
  };
}
