import type { FastifyRequest } from "fastify";

/** A host as a browser sends it: a name or IPv4 address, or a bracketed IPv6 one, and a port. */
const hostPattern =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

declare module "fastify" {
  interface FastifyInstance {
    /** PUBLIC_URL's origin, or null when URLs follow each request. */
    publicUrl: string | null;
  }
}

/**
 * The origin clients reach this server at: PUBLIC_URL when set; else as the request shows it:
 * `Host` and the connection's protocol, or, from a trusted proxy (TRUST_PROXY), the last
 * `X-Forwarded-Host` and `X-Forwarded-Proto`, exactly as Fastify reads them for `request.ip` and
 * Secure cookies. A host that is not a plain host name (or no host at all) gives null: the caller
 * shows a placeholder rather than a URL built from arbitrary header text.
 */
export function requestOrigin(request: FastifyRequest): string | null {
  if (request.server.publicUrl) return request.server.publicUrl;
  const protocol = String(request.protocol).toLowerCase() === "https" ? "https" : "http";
  const host = request.host.trim();
  return hostPattern.test(host) ? `${protocol}://${host.toLowerCase()}` : null;
}
